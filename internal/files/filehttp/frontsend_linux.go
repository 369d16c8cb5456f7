package filehttp

import (
	"errors"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// writeHeadMore writes a response head that a body will follow at once
// (sendfile) with MSG_MORE: the kernel holds it back until the body's
// first bytes join it, so that they leave in one segment, as nginx's
// tcp_nopush does (a head in a segment of its own costs the client a wake-up
// and a read). Without a TCP connection underneath, a plain write.
func writeHeadMore(c net.Conn, b []byte) error {
	tc := tcpOf(c)
	if tc == nil {
		_, err := c.Write(b)
		return err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
			switch {
			case err == unix.EAGAIN:
				return false // wait until writable
			case err == unix.EINTR:
				continue
			case err != nil:
				werr = err
				return true
			}
			b = b[n:]
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// sendFileAt sends n bytes of f from off to c with sendfile, leaving f's
// own offset alone (f is a segment file that other reads share).
func sendFileAt(c *net.TCPConn, f *os.File, off, n int64) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	cerr := src.Control(func(in uintptr) {
		err = rc.Write(func(out uintptr) bool {
			for n > 0 {
				k, err := unix.Sendfile(int(out), int(in), &off, int(min(n, 1<<30)))
				switch {
				case err == unix.EAGAIN:
					return false // wait until writable
				case err == unix.EINTR:
					continue
				case err != nil:
					serr = err
					return true
				case k == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than its record said
					return true
				}
				n -= int64(k)
			}
			return true
		})
	})
	return errors.Join(cerr, err, serr)
}
