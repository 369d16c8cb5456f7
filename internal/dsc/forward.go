package dsc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"
)

// A forwarded SYN travels from the master to the chosen node in one UDP
// datagram on the node-to-node network:
//
//	"MDSC" | len(master) (1 byte) | master | unix ms (8 bytes) | mac (16) | IPv4 packet
//
// The MAC (HMAC-SHA256 keyed with the cluster's hand-over key, first 16
// bytes) covers everything else, so nobody without the cluster key can
// make a node inject a packet; the master's ID lets the node refuse SYNs
// from a master it does not recognise (a paused one that resumed after a
// successor took over: fencing).
const (
	fwdMagic = "MDSC"
	macLen   = 16
	// MaxSkew is how far a forwarded SYN's time may be from the node's.
	MaxSkew = 5 * time.Second
)

var (
	errShort   = errors.New("forwarded SYN: too short")
	errMagic   = errors.New("forwarded SYN: not a forwarded SYN")
	errFwdMAC  = errors.New("forwarded SYN: not signed with this cluster's key")
	errFwdSkew = errors.New("forwarded SYN: too old or from the future")
)

// encodeForward builds the datagram.
func encodeForward(key []byte, master string, now time.Time, pkt []byte) []byte {
	b := make([]byte, 0, len(fwdMagic)+1+len(master)+8+macLen+len(pkt))
	b = append(b, fwdMagic...)
	b = append(b, byte(len(master)))
	b = append(b, master...)
	b = binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
	macAt := len(b)
	b = append(b, make([]byte, macLen)...)
	b = append(b, pkt...)
	copy(b[macAt:], fwdMAC(key, b[:macAt], pkt))
	return b
}

func fwdMAC(key, head, pkt []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(head)
	m.Write(pkt)
	return m.Sum(nil)[:macLen]
}

// decodeForward checks a datagram and returns the master's ID and the
// packet (a sub-slice of b).
func decodeForward(key []byte, b []byte, now time.Time) (master string, pkt []byte, err error) {
	if len(b) < len(fwdMagic)+1 {
		return "", nil, errShort
	}
	if string(b[:len(fwdMagic)]) != fwdMagic {
		return "", nil, errMagic
	}
	n := int(b[len(fwdMagic)])
	macAt := len(fwdMagic) + 1 + n + 8
	if len(b) < macAt+macLen {
		return "", nil, errShort
	}
	master = string(b[len(fwdMagic)+1 : len(fwdMagic)+1+n])
	pkt = b[macAt+macLen:]
	if !hmac.Equal(b[macAt:macAt+macLen], fwdMAC(key, b[:macAt], pkt)) {
		return "", nil, errFwdMAC
	}
	ms := int64(binary.BigEndian.Uint64(b[macAt-8 : macAt]))
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return "", nil, errFwdSkew
	}
	return master, pkt, nil
}
