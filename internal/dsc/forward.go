package dsc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"
)

// The agents talk in signed UDP datagrams on the node-to-node network:
//
//	kind (4 bytes) | len(sender) (1 byte) | sender | unix ms (8 bytes) | mac (16) | payload
//
// kind "MDSC" is a forwarded SYN (the payload an IPv4 packet, the sender
// the master); "MDSQ" asks a node for its half-open connections (payload: an
// 8-byte nonce) and "MDSR" answers (the nonce, then 6 bytes per client
// address:port: see halfopen.go).
//
// The MAC (HMAC-SHA256 keyed with the cluster's hand-over key, first 16
// bytes) covers everything else, so nobody without the cluster key can
// make a node inject a packet; the master's ID lets the node refuse SYNs
// from a master it does not recognise (a paused one that resumed after a
// successor took over: fencing).
const (
	fwdMagic   = "MDSC"
	queryMagic = "MDSQ"
	replyMagic = "MDSR"
	macLen     = 16
	// MaxSkew is how far a forwarded SYN's time may be from the node's.
	MaxSkew = 5 * time.Second
)

var (
	errShort   = errors.New("single-address datagram: too short")
	errMagic   = errors.New("single-address datagram: not one of ours")
	errFwdMAC  = errors.New("single-address datagram: not signed with this cluster's key")
	errFwdSkew = errors.New("single-address datagram: too old or from the future")
)

// encodeForward builds a forwarded SYN's datagram.
func encodeForward(key []byte, master string, now time.Time, pkt []byte) []byte {
	return encodeMsg(fwdMagic, key, master, now, pkt)
}

// encodeMsg builds a datagram of the given kind.
func encodeMsg(kind string, key []byte, sender string, now time.Time, payload []byte) []byte {
	b := make([]byte, 0, len(kind)+1+len(sender)+8+macLen+len(payload))
	b = append(b, kind...)
	b = append(b, byte(len(sender)))
	b = append(b, sender...)
	b = binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
	macAt := len(b)
	b = append(b, make([]byte, macLen)...)
	b = append(b, payload...)
	copy(b[macAt:], fwdMAC(key, b[:macAt], payload))
	return b
}

func fwdMAC(key, head, pkt []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(head)
	m.Write(pkt)
	return m.Sum(nil)[:macLen]
}

// decodeForward checks a forwarded SYN's datagram and returns the master's
// ID and the packet (a sub-slice of b).
func decodeForward(key []byte, b []byte, now time.Time) (master string, pkt []byte, err error) {
	kind, master, pkt, err := decodeMsg(key, b, now)
	if err == nil && kind != fwdMagic {
		err = errMagic
	}
	return master, pkt, err
}

// decodeMsg checks a datagram and returns its kind, sender and payload (a
// sub-slice of b).
func decodeMsg(key []byte, b []byte, now time.Time) (kind, sender string, payload []byte, err error) {
	if len(b) < len(fwdMagic)+1 {
		return "", "", nil, errShort
	}
	switch kind = string(b[:len(fwdMagic)]); kind {
	case fwdMagic, queryMagic, replyMagic:
	default:
		return "", "", nil, errMagic
	}
	n := int(b[len(fwdMagic)])
	macAt := len(fwdMagic) + 1 + n + 8
	if len(b) < macAt+macLen {
		return "", "", nil, errShort
	}
	sender = string(b[len(fwdMagic)+1 : len(fwdMagic)+1+n])
	payload = b[macAt+macLen:]
	if !hmac.Equal(b[macAt:macAt+macLen], fwdMAC(key, b[:macAt], payload)) {
		return "", "", nil, errFwdMAC
	}
	ms := int64(binary.BigEndian.Uint64(b[macAt-8 : macAt]))
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return "", "", nil, errFwdSkew
	}
	return kind, sender, payload, nil
}
