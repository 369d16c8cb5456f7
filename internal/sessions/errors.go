package sessions

import "errors"

// Errors of the sessions service; each message is for a person.
var (
	// ErrNotFound: no such session, or it belongs to another user (the two
	// are not told apart, so that IDs leak nothing).
	ErrNotFound = errors.New("no such session")
	// ErrUnknownKind: the kind is not configured on this node.
	ErrUnknownKind = errors.New("unknown session kind")
	// ErrNoAccount: the user has no Unix account on this node.
	ErrNoAccount = errors.New("no Unix account for this user")
	// ErrPrivileged: the user's account is root or mure's own.
	ErrPrivileged = errors.New("a session never runs as root or as the account running mure")
	// ErrCannotSwitch: this node cannot start programs as another account.
	ErrCannotSwitch = errors.New("this node cannot switch Unix accounts")
	// ErrLost: the session's node died; the session is gone with it.
	ErrLost = errors.New("the session was lost with its node")
	// ErrNoUser: the request has no authenticated user (authentication off).
	ErrNoUser = errors.New("sessions need an authenticated user")
	// ErrBadRequest: the request is malformed (a size, a kind name).
	ErrBadRequest = errors.New("bad request")
	// ErrUserLimit: the user runs as many sessions as a user may.
	ErrUserLimit = errors.New("too many sessions for this user")
	// ErrFull: every node that may take the session runs its most.
	ErrFull = errors.New("no node may take another session")
)
