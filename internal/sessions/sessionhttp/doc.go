// Package sessionhttp is the sessions service of a node: the client API
// (/sessions, /attach/ID over a WebSocket, /web/ID/ by reverse proxy) and
// the peer routes (/peer/sessions/...) that carry a request to the node a
// session runs on. Any node answers: a request for a session elsewhere is
// relayed over the peer port (TLS with the cluster key).
//
// # The attach WebSocket
//
// GET /attach/ID?cols=C&rows=R upgrades to a WebSocket. The server's
// first binary message is the screen as it is now; then binary messages
// are the program's output. The client sends its keystrokes as binary
// messages and {"type":"resize","cols":C,"rows":R} as text. The server
// sends {"type":"notice","text":...} (an idle warning) and
// {"type":"exit","code":N,"error":...} as text. Closing the socket
// detaches; the session runs on.
package sessionhttp
