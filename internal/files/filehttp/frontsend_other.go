//go:build !linux

package filehttp

import (
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// memSender writes a connection's answers from memory (a head, and a
// cached body or none) in one writev each (the raw call is Linux's here).
type memSender struct{}

// write sends head, then body, to c.
func (w *memSender) write(c *net.TCPConn, head, body []byte) error {
	bufs := net.Buffers{head, body}
	_, err := bufs.WriteTo(c)
	return err
}

// newSockReader returns a reader of c's socket (the raw call is Linux's
// here: c itself).
func newSockReader(c *net.TCPConn) io.Reader { return c }

// pollIn says whether fd has something to read, without waiting.
func pollIn(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0 && p[0].Revents&unix.POLLIN != 0
}

// writeHeadMore writes a response head; MSG_MORE is Linux's.
func writeHeadMore(c net.Conn, b []byte) error {
	_, err := c.Write(b)
	return err
}

// sendFileAt writes head, then copies n bytes of f from off, to c
// (sendfile at an offset is Linux's here).
func sendFileAt(c *net.TCPConn, head []byte, f *os.File, off, n int64) error {
	if _, err := c.Write(head); err != nil {
		return err
	}
	k, err := io.Copy(c, io.NewSectionReader(f, off, n))
	if err == nil && k < n {
		err = io.ErrUnexpectedEOF
	}
	return err
}
