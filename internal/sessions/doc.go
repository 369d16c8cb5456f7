// Package sessions is paper 004's persistent sessions: a user's terminal
// (a login shell, an operator's command) or web app that keeps running
// when its client goes, and is resumed from any node.
//
// It owns three things:
//   - the kinds a node offers (Kind, from mure serve --session-kind);
//   - the sessions' records in the replicated state (Part, namespace
//     "sessions"): who owns a session, its kind, the node it runs on, and
//     whether it runs or was lost with its node;
//   - the node's local sessions (Manager): each one is a holder process
//     (internal/sessions/holder) that owns the PTY and the screen, started
//     as the session's own unprivileged Unix account, adopted again after
//     the node restarts, culled when idle, and restarted on another node
//     for kinds that say so;
//   - where a new session goes (Manager.Decide): each kind's place=
//     policy over the nodes' session counts and gossiped figures, decided
//     on one node that counts the placements in flight (decision 0033).
//
// The HTTP and WebSocket faces are internal/sessions/sessionhttp. See
// docs/sessions.md.
package sessions
