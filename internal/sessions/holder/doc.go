// Package holder is the small process that owns one session's terminal,
// as dtach or tmux do: `mure session-holder DIR` starts the session's
// program under a PTY as the session's Unix account, keeps a terminal
// emulator's screen (charmbracelet/x/vt) fed with everything the program
// writes, and serves the session on the Unix socket DIR/sock to the node
// that started it. The node may stop, restart or be upgraded: the holder
// runs on in its own process session, and the next node process adopts it
// by dialling the socket again (docs/sessions.md).
//
// # The socket's protocol
//
// Frames of one type byte, a big-endian uint32 length and the payload
// (at most MaxFrame bytes). A connection first sends Hello: Attach makes
// it a terminal client (the holder answers the screen as it is now, then
// the live output); Control makes it a control channel (status, kill).
// Several attached clients may be connected at once; the PTY takes the
// smallest of their sizes. A client that does not read is never waited
// for: its queue is bounded, and when it overflows the client gets a
// fresh screen instead of the output it missed.
package holder
