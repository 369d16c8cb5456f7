package meta

import (
	"encoding/hex"
	"fmt"
)

// SHA256 is a content's SHA-256, kept raw in a record: 32 bytes where its
// hex string took 80 (a header and 64 bytes), once per file of a catalogue
// of millions. The zero value is no sum (a sum of zero bytes is taken for
// none: no content hashes to it in practice). Commands carry sums in hex,
// as every face shows them; a record's JSON too.
type SHA256 [32]byte

// MD5 is a content's MD5 (core v3), kept raw like SHA256; zero is none.
type MD5 [16]byte

// ParseSHA256 reads a hex SHA-256 (either case); "" is no sum.
func ParseSHA256(s string) (SHA256, error) {
	var d SHA256
	return d, parseDigest(d[:], s, "sha256")
}

// ParseMD5 reads a hex MD5 (either case); "" is none.
func ParseMD5(s string) (MD5, error) {
	var d MD5
	return d, parseDigest(d[:], s, "md5")
}

// IsZero reports whether there is no sum.
func (d SHA256) IsZero() bool { return d == SHA256{} }

// IsZero reports whether there is no sum.
func (d MD5) IsZero() bool { return d == MD5{} }

// String returns the sum in lowercase hex, "" when there is none.
func (d SHA256) String() string { return digestString(d[:], d.IsZero()) }

// String returns the sum in lowercase hex, "" when there is none.
func (d MD5) String() string { return digestString(d[:], d.IsZero()) }

// MarshalText writes the sum in lowercase hex ("" when none).
func (d SHA256) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalText writes the sum in lowercase hex ("" when none).
func (d MD5) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a hex sum, as ParseSHA256.
func (d *SHA256) UnmarshalText(b []byte) (err error) {
	*d, err = ParseSHA256(string(b))
	return err
}

// UnmarshalText reads a hex sum, as ParseMD5.
func (d *MD5) UnmarshalText(b []byte) (err error) {
	*d, err = ParseMD5(string(b))
	return err
}

func parseDigest(dst []byte, s, name string) error {
	if s == "" {
		return nil
	}
	if len(s) != 2*len(dst) {
		return fmt.Errorf("%w: %s %q is not %d hex digits", ErrBadCommand, name, s, 2*len(dst))
	}
	for i := range dst {
		hi, lo := hexValue[s[2*i]], hexValue[s[2*i+1]]
		if hi|lo > 0xf {
			clear(dst)
			return fmt.Errorf("%w: %s %q is not hex", ErrBadCommand, name, s)
		}
		dst[i] = hi<<4 | lo
	}
	return nil
}

// hexValue maps a hex digit (either case) to its value, anything else to
// 0xff.
var hexValue = func() (t [256]byte) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = byte(c - 'A' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()

func digestString(b []byte, zero bool) string {
	if zero {
		return ""
	}
	return hex.EncodeToString(b)
}
