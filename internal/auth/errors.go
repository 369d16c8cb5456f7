package auth

import "errors"

// Sentinel errors of the security model.
var (
	// ErrUnauthenticated: no credential, or one that matches nothing
	// (wrong password, unknown, expired or revoked token). Deliberately
	// one error, so an answer does not tell which part was wrong.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	// ErrForbidden: the caller is known but its role does not allow the
	// action.
	ErrForbidden = errors.New("auth: forbidden")
	// ErrMalformed: a credential that cannot be parsed.
	ErrMalformed = errors.New("auth: malformed credential")
	// ErrExists: a user, token or key of that name exists already.
	ErrExists = errors.New("auth: exists already")
	// ErrNotFound: no user, token or key of that name.
	ErrNotFound = errors.New("auth: not found")
	// ErrInvalid: a record that breaks a rule (bad name, bad grant).
	ErrInvalid = errors.New("auth: invalid")
	// ErrSeal: a sealed secret could not be opened (wrong cluster key or
	// a damaged record).
	ErrSeal = errors.New("auth: cannot open sealed secret")
)
