package dsc

import (
	"encoding/binary"
	"fmt"
)

// A SYN tapped on the sending host's side of a veth (or any device with
// transmit checksum offload) may carry a partial TCP checksum: the kernel left
// only the pseudo-header sum in the field for the hardware to finish. Injected
// as is into a TUN, the receiving kernel would drop it, so the node recomputes
// both checksums before injecting.

// FixChecksums recomputes, in place, the IPv4 header checksum and the TCP
// checksum of an unfragmented IPv4 TCP packet.
func FixChecksums(pkt []byte) error {
	ihl, tcp, err := tcpSegment(pkt)
	if err != nil {
		return fmt.Errorf("fix checksums: %w", err)
	}
	binary.BigEndian.PutUint16(pkt[10:12], 0)
	binary.BigEndian.PutUint16(pkt[10:12], ^fold(sum16(pkt[:ihl], 0)))
	binary.BigEndian.PutUint16(tcp[16:18], 0)
	binary.BigEndian.PutUint16(tcp[16:18], ^fold(tcpSum(pkt, tcp)))
	return nil
}

// ValidChecksums reports whether both the IPv4 header checksum and the TCP
// checksum of an unfragmented IPv4 TCP packet are correct.
func ValidChecksums(pkt []byte) bool {
	ihl, tcp, err := tcpSegment(pkt)
	if err != nil {
		return false
	}
	// Summed over the checksum field too, a correct header folds to all ones.
	return fold(sum16(pkt[:ihl], 0)) == 0xffff && fold(tcpSum(pkt, tcp)) == 0xffff
}

// tcpSegment checks pkt as an unfragmented IPv4 TCP packet and returns its
// header length and its TCP segment (header and payload).
func tcpSegment(pkt []byte) (ihl int, tcp []byte, err error) {
	ihl, total, err := ipv4Header(pkt)
	if err != nil {
		return 0, nil, err
	}
	// The TCP checksum covers the whole segment, which a fragment lacks.
	if fo := binary.BigEndian.Uint16(pkt[6:8]); fo&(ipFlagMF|ipOffsetMask) != 0 {
		return 0, nil, fmt.Errorf("flags/offset %#04x: %w", fo, ErrFragment)
	}
	if pkt[9] != protoTCP {
		return 0, nil, fmt.Errorf("protocol %d: %w", pkt[9], ErrNotTCP)
	}
	tcp = pkt[ihl:total]
	if err := checkTCPHeader(tcp); err != nil {
		return 0, nil, err
	}
	return ihl, tcp, nil
}

// tcpSum is the unfolded one's-complement sum of the TCP pseudo-header
// (source, destination, zero, protocol, TCP length; RFC 793) and the segment.
func tcpSum(pkt, tcp []byte) uint64 {
	acc := sum16(pkt[12:20], 0)
	acc += protoTCP + uint64(len(tcp))
	return sum16(tcp, acc)
}

// sum16 adds b to acc as big-endian 16-bit words (RFC 1071), padding an odd
// final byte with zero. A uint64 accumulator cannot overflow for any packet.
func sum16(b []byte, acc uint64) uint64 {
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// fold folds the carries of a one's-complement sum back into 16 bits.
func fold(acc uint64) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}
