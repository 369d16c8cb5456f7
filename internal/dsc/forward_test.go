package dsc

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestForwardRoundTrip(t *testing.T) {
	key := []byte("cluster hand-over key")
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pkt := []byte{0x45, 0, 0, 20, 1, 2, 3, 4}
	good := encodeForward(key, "master-1", now, pkt)
	tamper := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	for _, tc := range []struct {
		name string
		in   []byte
		key  []byte
		at   time.Time
		want error
	}{
		{"valid", good, key, now, nil},
		{"clock 4 s apart", good, key, now.Add(4 * time.Second), nil},
		{"stale", good, key, now.Add(6 * time.Second), errFwdSkew},
		{"other key", good, []byte("another"), now, errFwdMAC},
		{"packet changed", tamper(len(good) - 1), key, now, errFwdMAC},
		{"master changed", tamper(6), key, now, errFwdMAC},
		{"not ours", []byte("GET / HTTP/1.1"), key, now, errMagic},
		{"short", good[:10], key, now, errShort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, got, err := decodeForward(tc.key, tc.in, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("decode = %v, want %v", err, tc.want)
			}
			if err == nil && (master != "master-1" || !bytes.Equal(got, pkt)) {
				t.Fatalf("decoded %q %x", master, got)
			}
		})
	}
}
