package dsc

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tap is the master's view of the client network: an AF_PACKET socket on
// the client interface that, through SYNFilter, receives only client SYNs
// to the cluster address and port.
type tap struct {
	fd     int
	closed atomic.Bool
}

func openTap(iface string, dst netip.Addr, port uint16) (*tap, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("single-address tap: %w", err)
	}
	prog, err := SYNFilter(dst, port)
	if err != nil {
		return nil, err
	}
	// Protocol 0 until the filter is attached: nothing is queued
	// unfiltered; bind with ETH_P_IP afterwards.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("single-address tap: AF_PACKET socket (root needed): %w", err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("single-address tap: attach filter: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("single-address tap: bind to %s: %w", iface, err)
	}
	// The kernel stamps each frame with its arrival time, so that a master
	// that was paused can tell the SYNs that waited in its socket.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("single-address tap: %w", err)
	}
	// A receive timeout lets the reading loop notice close.
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("single-address tap: %w", err)
	}
	return &tap{fd: fd}, nil
}

// read returns the next frame into buf and when the kernel received it,
// or net.ErrClosed once close was called (the reading goroutine closes the
// socket itself, so that its number is never reused under a read in
// progress).
func (t *tap) read(buf []byte) (int, time.Time, error) {
	var oob [64]byte
	for {
		if t.closed.Load() {
			unix.Close(t.fd)
			return 0, time.Time{}, net.ErrClosed
		}
		n, oobn, _, _, err := unix.Recvmsg(t.fd, buf, oob[:], 0)
		switch err {
		case nil:
			return n, arrival(oob[:oobn]), nil
		case unix.EAGAIN, unix.EINTR:
			continue
		}
		return 0, time.Time{}, fmt.Errorf("single-address tap: read: %w", err)
	}
}

// arrival reads the SO_TIMESTAMPNS control message (now if absent).
func arrival(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				return time.Unix(ts.Unix())
			}
		}
	}
	return time.Now()
}

// close makes the reading loop stop (within the receive timeout) and
// close the socket.
func (t *tap) close() { t.closed.Store(true) }

func htons(v uint16) uint16 { return v<<8 | v>>8 }
