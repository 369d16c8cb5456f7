package dsc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// A new master must know where its predecessor sent the SYNs whose
// handshakes are still open, or a client's retransmitted SYN could reach a
// second node (paper 001). Every node reports its half-open connections to
// the cluster address — the kernel lists them in /proc/net/tcp in state
// SYN_RECV (03) — and the master rebuilds its table from the reports
// before it places a SYN.

// tcpSynRecv is the state column of a half-open connection in /proc/net/tcp.
const tcpSynRecv = "03"

// ParseHalfOpen reads /proc/net/tcp and returns the remote address:ports of
// the connections in SYN_RECV whose local end is local.
func ParseHalfOpen(r io.Reader, local netip.AddrPort) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header line
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			return nil, fmt.Errorf("/proc/net/tcp: short line %q", sc.Text())
		}
		if f[3] != tcpSynRecv {
			continue
		}
		l, err := parseProcAddr(f[1])
		if err != nil {
			return nil, err
		}
		if l != local {
			continue
		}
		rem, err := parseProcAddr(f[2])
		if err != nil {
			return nil, err
		}
		out = append(out, rem)
	}
	return out, sc.Err()
}

// parseProcAddr parses "0AC34D0A:1F90": the IPv4 address as the kernel's
// 32-bit word in host byte order, then the port.
func parseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(a) != 8 {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: address %q: not IPv4", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: address %q: %w", s, err)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: port %q: %w", s, err)
	}
	var ip [4]byte
	binary.NativeEndian.PutUint32(ip[:], binary.BigEndian.Uint32(raw))
	return netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(port)), nil
}

// maxReported bounds a reply to one datagram (and a SYN flood's share of
// the master's table rebuild).
const maxReported = 8192

// encodeHalfOpen is a reply's payload: the query's nonce, then each IPv4
// client address and port in 6 bytes (at most maxReported).
func encodeHalfOpen(nonce uint64, clients []netip.AddrPort) []byte {
	clients = clients[:min(len(clients), maxReported)]
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+6*len(clients)), nonce)
	for _, c := range clients {
		a := c.Addr().As4()
		b = append(b, a[:]...)
		b = binary.BigEndian.AppendUint16(b, c.Port())
	}
	return b
}

var errHalfOpen = errors.New("half-open report: malformed")

func decodeHalfOpen(b []byte) (nonce uint64, clients []netip.AddrPort, err error) {
	if len(b) < 8 || (len(b)-8)%6 != 0 {
		return 0, nil, errHalfOpen
	}
	nonce = binary.BigEndian.Uint64(b)
	for b = b[8:]; len(b) > 0; b = b[6:] {
		clients = append(clients, netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), binary.BigEndian.Uint16(b[4:6])))
	}
	return nonce, clients, nil
}
