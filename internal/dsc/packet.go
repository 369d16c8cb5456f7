package dsc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Errors returned by ParseFrame, ParseIPv4 and FixChecksums, wrapped with the
// detail that made the packet unacceptable; test them with errors.Is.
var (
	ErrTruncated = errors.New("dsc: truncated packet")
	ErrMalformed = errors.New("dsc: malformed header")
	ErrNotIPv4   = errors.New("dsc: not IPv4")
	ErrFragment  = errors.New("dsc: IPv4 fragment")
	ErrNotTCP    = errors.New("dsc: not TCP")
	ErrNotSYN    = errors.New("dsc: not a connection-opening SYN")
)

const (
	ethHeaderLen  = 14
	vlanTagLen    = 4
	etherTypeIPv4 = 0x0800
	etherTypeVLAN = 0x8100
	ipMinHeader   = 20
	tcpMinHeader  = 20
	protoTCP      = 6
	ipFlagMF      = 0x2000
	ipOffsetMask  = 0x1fff
	tcpFlagSYN    = 0x02
	tcpFlagACK    = 0x10
)

// SYN is a client's connection-opening segment as the master taps it.
type SYN struct {
	Client netip.AddrPort // the client's source address and port
	Server netip.AddrPort // the cluster address and service port it asked for
	ISN    uint32         // the client's initial sequence number
	// Packet is the IPv4 packet, without link header or link padding. It
	// aliases the parsed buffer: copy it before reusing that buffer.
	Packet []byte
}

// ParseFrame parses an Ethernet II frame, optionally carrying one 802.1Q tag,
// that holds an IPv4 TCP SYN (SYN set, ACK clear).
func ParseFrame(frame []byte) (SYN, error) {
	if len(frame) < ethHeaderLen {
		return SYN{}, fmt.Errorf("ethernet header: %d bytes: %w", len(frame), ErrTruncated)
	}
	off := ethHeaderLen
	etherType := binary.BigEndian.Uint16(frame[12:14])
	if etherType == etherTypeVLAN {
		if len(frame) < ethHeaderLen+vlanTagLen {
			return SYN{}, fmt.Errorf("802.1Q tag: %d bytes: %w", len(frame), ErrTruncated)
		}
		etherType = binary.BigEndian.Uint16(frame[16:18])
		off += vlanTagLen
	}
	if etherType != etherTypeIPv4 {
		return SYN{}, fmt.Errorf("ethertype %#04x: %w", etherType, ErrNotIPv4)
	}
	syn, err := ParseIPv4(frame[off:])
	if err != nil {
		return SYN{}, fmt.Errorf("frame: %w", err)
	}
	return syn, nil
}

// ParseIPv4 parses a bare IPv4 packet that holds a TCP SYN (SYN set, ACK
// clear). Bytes past the IPv4 total length (link padding) are left out of
// SYN.Packet.
func ParseIPv4(pkt []byte) (SYN, error) {
	ihl, total, err := ipv4Header(pkt)
	if err != nil {
		return SYN{}, err
	}
	ip := pkt[:total]
	if fo := binary.BigEndian.Uint16(ip[6:8]); fo&(ipFlagMF|ipOffsetMask) != 0 {
		// A SYN is never fragmented in practice; a fragment cannot be
		// re-injected on its own, so it is not ours to schedule.
		return SYN{}, fmt.Errorf("flags/offset %#04x: %w", fo, ErrFragment)
	}
	if ip[9] != protoTCP {
		return SYN{}, fmt.Errorf("protocol %d: %w", ip[9], ErrNotTCP)
	}
	tcp := ip[ihl:]
	if err := checkTCPHeader(tcp); err != nil {
		return SYN{}, err
	}
	if flags := tcp[13]; flags&tcpFlagSYN == 0 || flags&tcpFlagACK != 0 {
		return SYN{}, fmt.Errorf("tcp flags %#02x: %w", flags, ErrNotSYN)
	}
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	return SYN{
		Client: netip.AddrPortFrom(src, binary.BigEndian.Uint16(tcp[0:2])),
		Server: netip.AddrPortFrom(dst, binary.BigEndian.Uint16(tcp[2:4])),
		ISN:    binary.BigEndian.Uint32(tcp[4:8]),
		Packet: ip,
	}, nil
}

// ipv4Header checks the IPv4 version and lengths and returns the header
// length and the total length, both in bytes and within pkt.
func ipv4Header(pkt []byte) (ihl, total int, err error) {
	if len(pkt) < ipMinHeader {
		return 0, 0, fmt.Errorf("ipv4 header: %d bytes: %w", len(pkt), ErrTruncated)
	}
	if v := pkt[0] >> 4; v != 4 {
		return 0, 0, fmt.Errorf("ip version %d: %w", v, ErrNotIPv4)
	}
	ihl = int(pkt[0]&0x0f) * 4
	total = int(binary.BigEndian.Uint16(pkt[2:4]))
	switch {
	case ihl < ipMinHeader:
		return 0, 0, fmt.Errorf("ipv4 header length %d: %w", ihl, ErrMalformed)
	case total < ihl:
		return 0, 0, fmt.Errorf("ipv4 total length %d < header %d: %w", total, ihl, ErrMalformed)
	case total > len(pkt):
		return 0, 0, fmt.Errorf("ipv4 total length %d > %d bytes: %w", total, len(pkt), ErrTruncated)
	}
	return ihl, total, nil
}

// checkTCPHeader checks that seg holds a whole TCP header, options included.
func checkTCPHeader(seg []byte) error {
	if len(seg) < tcpMinHeader {
		return fmt.Errorf("tcp header: %d bytes: %w", len(seg), ErrTruncated)
	}
	doff := int(seg[12]>>4) * 4
	if doff < tcpMinHeader {
		return fmt.Errorf("tcp data offset %d: %w", doff, ErrMalformed)
	}
	if doff > len(seg) {
		return fmt.Errorf("tcp data offset %d > %d bytes: %w", doff, len(seg), ErrTruncated)
	}
	return nil
}
