package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters. A hash records its own, so
// hashes made with other parameters keep verifying after they change.
type HashParams struct {
	// Time is the number of passes over the memory.
	Time uint32
	// MemoryKiB is the memory used, in KiB: the cost that makes
	// guessing on GPUs expensive.
	MemoryKiB uint32
	// Threads is the parallelism.
	Threads uint8
}

// DefaultHashParams are RFC 9106's second recommended option (t=3, 64 MiB,
// p=4): about 50–100 ms per hash on a server core. Production uses these.
func DefaultHashParams() HashParams { return HashParams{Time: 3, MemoryKiB: 64 << 10, Threads: 4} }

// TestHashParams are deliberately cheap parameters for tests, chosen
// explicitly by a test's configuration; nothing uses them by default.
func TestHashParams() HashParams { return HashParams{Time: 1, MemoryKiB: 64, Threads: 1} }

const (
	saltLen = 16
	hashLen = 32
)

// HashPassword returns password's argon2id hash in the PHC string form
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash), with a random salt.
func HashPassword(password string, p HashParams) (string, error) {
	if p == (HashParams{}) {
		p = DefaultHashParams()
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, hashLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(sum)), nil
}

// maxHashMemoryKiB bounds the memory a stored hash may ask for (1 GiB), so
// a damaged record cannot make a node allocate without bound.
const maxHashMemoryKiB = 1 << 20

// parseHash reads HashPassword's form.
func parseHash(encoded string) (p HashParams, salt, sum []byte, err error) {
	f := strings.Split(encoded, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" {
		return p, nil, nil, fmt.Errorf("%w: not an argon2id hash", ErrMalformed)
	}
	var v int
	if _, err := fmt.Sscanf(f[2], "v=%d", &v); err != nil || v != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: argon2 version %q", ErrMalformed, f[2])
	}
	if _, err := fmt.Sscanf(f[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.Time == 0 || p.Threads == 0 || p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxHashMemoryKiB || p.Time > 64 {
		return p, nil, nil, fmt.Errorf("%w: argon2 parameters %q", ErrMalformed, f[3])
	}
	enc := base64.RawStdEncoding
	if salt, err = enc.DecodeString(f[4]); err != nil || len(salt) < 8 {
		return p, nil, nil, fmt.Errorf("%w: salt", ErrMalformed)
	}
	if sum, err = enc.DecodeString(f[5]); err != nil || len(sum) < 16 || len(sum) > 64 {
		return p, nil, nil, fmt.Errorf("%w: hash", ErrMalformed)
	}
	return p, salt, sum, nil
}

// CheckPassword reports whether password matches encoded, comparing in
// constant time.
func CheckPassword(encoded, password string) bool {
	p, salt, sum, err := parseHash(encoded)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(sum)))
	return subtle.ConstantTimeCompare(got, sum) == 1
}
