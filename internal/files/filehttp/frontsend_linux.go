package filehttp

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mure-dev/mure/internal/socket"
)

// memSender writes a connection's answers from memory (a head, and a
// cached body or none) in one writev each, by a raw system call: one Go's
// scheduler is not told of. On a non-blocking socket the call never
// waits, but one that copies 64 KiB into loopback's buffers (and runs the
// reader's delivery) lasts 20 µs or more: long enough, as an ordinary
// call, for the scheduler's monitor to take the goroutine's P away
// mid-call and hand it to another thread, which the writer must then win
// back, a futex wake and sleep per answer, the monitor kept at its 20-µs
// tick (decision 0065). A full socket (EAGAIN) waits in the poller as
// any write does. The zero value is ready; it keeps the connection's raw
// handle and its send function from the first answer on, so that an
// answer allocates nothing.
type memSender struct {
	rc         syscall.RawConn
	send       func(fd uintptr) bool // w.sendAll, bound once
	head, body []byte                // what is left to send
	iov        [2]unix.Iovec
	err        error
}

// write sends head, then body, to c (the connection of every call).
func (w *memSender) write(c *net.TCPConn, head, body []byte) error {
	if w.rc == nil {
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		w.rc, w.send = rc, w.sendAll
	}
	w.head, w.body, w.err = head, body, nil
	err := w.rc.Write(w.send)
	w.head, w.body, w.iov = nil, nil, [2]unix.Iovec{} // hold no answer's bytes
	if err != nil {
		return err
	}
	return w.err
}

// sockReader reads a connection's socket by raw read calls, as memSender
// writes it: a read that finds nothing (EAGAIN) waits in the poller as
// net.Conn's does, under the connection's read deadline, but the call
// itself is not one the scheduler is told of. Told of, the front's reads
// kept the scheduler's monitor at its 20-µs tick (a thread preempted
// mid-call on a busy machine leaves its P in a system call long enough to
// be taken), and its wake-ups were 5–6 % of the node's CPU at 64 KiB
// (decision 0065).
type sockReader struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // r.read, bound once
	p   []byte
	n   int
	err error
}

// newSockReader returns a reader of c's socket; nil when c has none.
func newSockReader(c *net.TCPConn) io.Reader {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	r := &sockReader{rc: rc}
	r.fn = r.read
	return r
}

func (r *sockReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, r.err
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// read reads once from fd into r.p; false when there is nothing yet.
func (r *sockReader) read(fd uintptr) bool {
	for {
		k, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
		switch e {
		case 0:
			r.n = int(k)
			return true
		case unix.EAGAIN:
			return false
		case unix.EINTR:
			continue
		default:
			r.err = e
			return true
		}
	}
}

// pollIn says whether fd has something to read (a listener: a connection
// waiting), by a ppoll that does not wait, made as a raw call: up to a
// thousand a second from the front's goroutines (Prompt), and an ordinary
// call wakes the scheduler's monitor from its sleep each time the node's Ps
// have all gone idle, back to its 20-µs tick (decision 0065; 2,000–2,600
// wake-ups a second at 64 KiB against 170–280 without).
func pollIn(fd uintptr) bool {
	p := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	var zero unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&p[0])), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return e == 0 && n > 0 && p[0].Revents&unix.POLLIN != 0
}

// sendAll writes what is left of the answer to fd; false when the socket
// is full (the poller waits until it is writable, then calls again).
func (w *memSender) sendAll(fd uintptr) bool {
	for len(w.head)+len(w.body) > 0 {
		n := 0
		for _, b := range [2][]byte{w.head, w.body} {
			if len(b) > 0 {
				w.iov[n].Base = &b[0]
				w.iov[n].SetLen(len(b))
				n++
			}
		}
		k, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(n))
		switch e {
		case 0:
		case unix.EAGAIN:
			return false
		case unix.EINTR:
			continue
		default:
			w.err = e
			return true
		}
		if k == 0 { // no progress and no error: end, not spin (as poll.FD.Write)
			w.err = io.ErrUnexpectedEOF
			return true
		}
		sent := int(k)
		h := min(sent, len(w.head))
		w.head, w.body = w.head[h:], w.body[sent-h:]
	}
	return true
}

// writeHeadMore writes a response head that a body will follow at once
// (sendfile) with MSG_MORE: the kernel holds it back until the body's
// first bytes join it, so that they leave in one segment, as nginx's
// tcp_nopush does (a head in a segment of its own costs the client a wake-up
// and a read). Without a TCP connection underneath, a plain write.
func writeHeadMore(c net.Conn, b []byte) error {
	tc := socket.TCP(c)
	if tc == nil {
		_, err := c.Write(b)
		return err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	return sendMore(rc, b)
}

// sendMore writes b to rc's socket with MSG_MORE.
func sendMore(rc syscall.RawConn, b []byte) error {
	return whenWritable(rc, func(fd int) (bool, error) {
		n, err := unix.SendmsgN(fd, b, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
		if err != nil {
			return false, err
		}
		b = b[n:]
		return len(b) == 0, nil
	})
}

// sendFileAt sends head (as writeHeadMore does), then n bytes of f from
// off with sendfile, to c, leaving f's own offset alone (f is a segment
// file that other reads share).
func sendFileAt(c *net.TCPConn, head []byte, f *os.File, off, n int64) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	if len(head) > 0 {
		if err := sendMore(rc, head); err != nil {
			return err
		}
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = src.Control(func(in uintptr) {
		serr = whenWritable(rc, func(out int) (bool, error) {
			if n == 0 {
				return true, nil
			}
			k, err := unix.Sendfile(out, int(in), &off, int(min(n, 1<<30)))
			switch {
			case err != nil:
				return false, err
			case k == 0:
				return true, io.ErrUnexpectedEOF // the file is shorter than its record said
			}
			n -= int64(k)
			return n == 0, nil
		})
	})
	return errors.Join(err, serr)
}

// whenWritable calls send with the socket of rc until it reports done or
// fails, waiting in the poller while the socket is full (EAGAIN) and
// calling again at once after a signal (EINTR).
func whenWritable(rc syscall.RawConn, send func(fd int) (done bool, err error)) error {
	var serr error
	err := rc.Write(func(fd uintptr) bool {
		for {
			done, err := send(int(fd))
			switch {
			case err == unix.EAGAIN:
				return false // wait until writable
			case err == unix.EINTR:
				continue
			case err != nil:
				serr = err
				return true
			case done:
				return true
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}
