package auth

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// sealInfo separates the sealing key from every other key derived from
// the cluster key.
const sealInfo = "mure auth: access key secrets v1"

// Sealer encrypts secrets that must be recovered later (an access key's
// secret, to check a request signed with it) with XChaCha20-Poly1305,
// under a key derived from the cluster key with HKDF-SHA256. Every node
// holds the cluster key, so any node opens what another sealed.
type Sealer struct{ aead cipher.AEAD }

// NewSealer derives the sealing key from the cluster key.
func NewSealer(clusterKey []byte) (*Sealer, error) {
	if len(clusterKey) < 16 {
		return nil, fmt.Errorf("%w: cluster key of %d bytes", ErrInvalid, len(clusterKey))
	}
	k, err := hkdf.Key(sha256.New, clusterKey, nil, sealInfo, chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.NewX(k)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts secret, bound to label (the record it belongs to, so a
// sealed value copied to another record does not open), as base64 of
// nonce and ciphertext.
func (s *Sealer) Seal(label, secret string) string {
	nonce := randomBytes(s.aead.NonceSize())
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), []byte(label)))
}

// Open decrypts what Seal returned for label.
func (s *Sealer) Open(label, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", ErrSeal
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(label))
	if err != nil {
		return "", ErrSeal
	}
	return string(plain), nil
}
