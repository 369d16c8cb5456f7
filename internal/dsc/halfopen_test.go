package dsc

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// A /proc/net/tcp of a node holding the cluster address 10.77.195.10:8080
// (little-endian host): two half-open connections to it, one established,
// one half-open to another port, a listener.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0AC34D0A:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0AC34D0A:1F90 0BC34D0A:C350 03 00000000:00000000 02:00000157 00000002     0        0 0 0 0000000000000000
   2: 0AC34D0A:1F90 0CC34D0A:A411 03 00000000:00000000 02:00000157 00000000     0        0 0 0 0000000000000000
   3: 0AC34D0A:1F90 0BC34D0A:C351 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   4: 0AC34D0A:1F91 0BC34D0A:C352 03 00000000:00000000 02:00000157 00000000     0        0 0 0 0000000000000000
`

func TestParseHalfOpen(t *testing.T) {
	if !littleEndian() {
		t.Skip("the sample is a little-endian host's")
	}
	local := netip.MustParseAddrPort("10.77.195.10:8080")
	got, err := ParseHalfOpen(strings.NewReader(procNetTCP), local)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("10.77.195.11:50000"), netip.MustParseAddrPort("10.77.195.12:42001")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("half-open = %v, want %v", got, want)
	}
	for _, bad := range []string{"h\n 0: 0AC34D0A:1F90\n", "h\n 0: 0AC34D:1F90 0BC34D0A:C350 03\n", "h\n 0: 0AC34D0A:1F90 0BC34D0A:XYZ 03\n"} {
		if _, err := ParseHalfOpen(strings.NewReader(bad), local); err == nil {
			t.Errorf("parsed %q without an error", bad)
		}
	}
}

func TestHalfOpenReportRoundTrip(t *testing.T) {
	clients := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("192.168.7.9:65535")}
	nonce, got, err := decodeHalfOpen(encodeHalfOpen(42, clients))
	if err != nil || nonce != 42 || !reflect.DeepEqual(got, clients) {
		t.Fatalf("round trip: %d %v %v", nonce, got, err)
	}
	if _, _, err := decodeHalfOpen([]byte{1, 2, 3}); !errors.Is(err, errHalfOpen) {
		t.Fatalf("short report: %v", err)
	}
	if _, _, err := decodeHalfOpen(make([]byte, 8+5)); !errors.Is(err, errHalfOpen) {
		t.Fatalf("ragged report: %v", err)
	}
	many := make([]netip.AddrPort, maxReported+10)
	for i := range many {
		many[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), uint16(i))
	}
	if _, got, _ := decodeHalfOpen(encodeHalfOpen(1, many)); len(got) != maxReported {
		t.Fatalf("a report of %d carried %d entries, want the cap %d", len(many), len(got), maxReported)
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }
