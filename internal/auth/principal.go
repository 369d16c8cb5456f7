package auth

import "strings"

// Action is what a request does, for authorization.
type Action int

// Actions, from least to most powerful.
const (
	// Known is any authenticated caller (not the anonymous one): reading
	// the cluster's status, managing one's own tokens.
	Known Action = iota - 1
	// Read reads files (GET, HEAD, listings) under a path.
	Read Action = iota
	// Write writes or deletes files under a path.
	Write
	// Admin changes the cluster: settings, members, users, tokens, keys.
	Admin
	// Run starts, lists, attaches to and ends sessions: any user may, and
	// it is all a session's credential may do (for that session's
	// children: the sessions service checks which).
	Run
)

func (a Action) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	case Known:
		return "use the API"
	case Run:
		return "run sessions"
	}
	return "admin"
}

// Via says how a principal authenticated.
const (
	ViaToken       = "token"
	ViaPassword    = "password"
	ViaAccessKey   = "access_key"
	ViaStaticToken = "static_token" // the deprecated --token
	ViaAnonymous   = "anonymous"
	ViaSession     = "session" // a session's credential (mure run)
)

// Principal is who a request acts for, and what it may do.
type Principal struct {
	// User is the user's name ("" for the anonymous caller).
	User string
	// Via is how it authenticated (ViaToken, ...); Credential names the
	// token or key used.
	Via, Credential string
	Admin           bool
	Grants          []Grant
	// Session, when set, is the session whose credential authenticated
	// the caller: it may only Run, and only that session's children.
	Session string
}

// Anonymous is the caller without credentials, with the grants the node
// opens to everyone (--anonymous-read).
func Anonymous(grants []Grant) Principal {
	return Principal{Via: ViaAnonymous, Grants: grants}
}

// Allowed reports whether the principal may do a on path (a file key;
// ignored for Admin). An admin may do everything; a grant covers the keys
// that start with its prefix, and a write grant covers reads.
func (p Principal) Allowed(a Action, path string) bool {
	if p.Session != "" {
		return a == Run
	}
	if p.Admin {
		return true
	}
	switch a {
	case Admin:
		return false
	case Known, Run:
		return p.Via != ViaAnonymous && p.Via != ""
	}
	for _, g := range p.Grants {
		if strings.HasPrefix(path, g.Prefix) && (a == Read || g.Write) {
			return true
		}
	}
	return false
}

// Name is the principal as audit logs and errors show it.
func (p Principal) Name() string {
	if p.User == "" {
		return "anonymous"
	}
	return p.User
}
