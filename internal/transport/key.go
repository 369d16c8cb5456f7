package transport

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// KeySize is the length in bytes of a cluster key.
const KeySize = 32

// Key is the shared cluster secret. Every node of a cluster holds the same
// key; it authenticates TLS peers and seeds memberlist's packet encryption.
type Key [KeySize]byte

// Domain-separation labels for values derived from a Key.
const (
	gossipKeyLabel = "mure-gossip-v1"
	tlsKeyLabel    = "mure-tls-v1"
	handoverLabel  = "mure-handover-v1"
)

// NewKey returns a fresh random cluster key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("transport: generate cluster key: %w", err)
	}
	return k, nil
}

// ParseKey decodes a key produced by [Key.String] (standard base64 of 32
// bytes). Surrounding whitespace is ignored.
func ParseKey(s string) (Key, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return Key{}, fmt.Errorf("transport: parse cluster key: %w", err)
	}
	if len(b) != KeySize {
		return Key{}, fmt.Errorf("transport: parse cluster key: got %d bytes, want %d", len(b), KeySize)
	}
	var k Key
	copy(k[:], b)
	return k, nil
}

// String returns the standard base64 encoding of the key.
func (k Key) String() string {
	return base64.StdEncoding.EncodeToString(k[:])
}

// GossipKey returns the 32-byte memberlist SecretKey derived from k:
// sha256("mure-gossip-v1" || k).
func (k Key) GossipKey() []byte {
	d := k.derive(gossipKeyLabel)
	return d[:]
}

// HandoverKey returns the HMAC key with which a front door signs the
// connections it hands over to a node: sha256("mure-handover-v1" || k).
func (k Key) HandoverKey() []byte {
	d := k.derive(handoverLabel)
	return d[:]
}

// derive returns sha256(label || k).
func (k Key) derive(label string) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write(k[:])
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
