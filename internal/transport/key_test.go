package transport

import (
	"bytes"
	"encoding/base64"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	k := mustKey(t)
	got, err := ParseKey(k.String())
	if err != nil {
		t.Fatalf("ParseKey: %v", err)
	}
	if got != k {
		t.Fatal("round trip changed the key")
	}
	if got2, err := ParseKey("  " + k.String() + "\n"); err != nil || got2 != k {
		t.Fatalf("ParseKey with whitespace: %v", err)
	}
	k2 := mustKey(t)
	if k2 == k {
		t.Fatal("two NewKey calls returned the same key")
	}
}

func TestParseKeyErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"not base64": "not*base64!",
		"short":      base64.StdEncoding.EncodeToString(make([]byte, 31)),
		"long":       base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"url base64": base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
	} {
		if _, err := ParseKey(in); err == nil {
			t.Errorf("%s: ParseKey(%q) succeeded", name, in)
		}
	}
}

func TestGossipKey(t *testing.T) {
	k := mustKey(t)
	g := k.GossipKey()
	if len(g) != 32 {
		t.Fatalf("gossip key is %d bytes", len(g))
	}
	if bytes.Equal(g, k[:]) {
		t.Fatal("gossip key equals the cluster key")
	}
	if !bytes.Equal(g, k.GossipKey()) {
		t.Fatal("gossip key not deterministic")
	}
	if k2 := mustKey(t); bytes.Equal(g, k2.GossipKey()) {
		t.Fatal("different keys gave the same gossip key")
	}
}
