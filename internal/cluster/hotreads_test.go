package cluster

import (
	"slices"
	"testing"
)

func TestHotReadsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   []HotRead
		want []HotRead
	}{
		{"none", nil, nil},
		{"two", []HotRead{{Key: 0xbeef, PerSecond: 120}, {Key: 1, PerSecond: 0}}, []HotRead{{Key: 0xbeef, PerSecond: 120}, {Key: 1, PerSecond: 0}}},
		{"key bits and rate capped", []HotRead{{Key: 0xdeadbeef, PerSecond: 1 << 40}}, []HotRead{{Key: 0xadbeef, PerSecond: MaxHotRate}}},
		{"at most MaxHotReads", slices.Repeat([]HotRead{{Key: 7, PerSecond: 7}}, MaxHotReads+3), slices.Repeat([]HotRead{{Key: 7, PerSecond: 7}}, MaxHotReads)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeHotReads(encodeHotReads(tc.in)); !slices.Equal(got, tc.want) {
				t.Fatalf("round trip of %v: %v (%q)", tc.in, got, encodeHotReads(tc.in))
			}
		})
	}
	// What cannot be read is skipped, the rest kept.
	if got := decodeHotReads("zz:1,ab:x,10:5,-1:2,20:-3,1000000:1"); !slices.Equal(got, []HotRead{{Key: 0x10, PerSecond: 5}}) {
		t.Fatalf("decode of a damaged list: %v", got)
	}
}
