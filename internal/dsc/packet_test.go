package dsc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// Known-answer vectors. The checksums were computed independently of this
// package while writing the test, with:
//
//	python3 -c "
//	import struct
//	def s(b):
//	    if len(b)%2: b+=b'\0'
//	    x=sum(struct.unpack('!%dH'%(len(b)//2),b))
//	    while x>>16: x=(x&0xffff)+(x>>16)
//	    return x
//	cs=lambda b:(~s(b))&0xffff
//	src=bytes([10,77,0,101]);dst=bytes([10,77,0,200])
//	ip=struct.pack('!BBHHHBBH4s4s',0x45,0,44,0x1234,0x4000,64,6,0,src,dst)
//	tcp=struct.pack('!HHIIBBHHH',40000,8080,0x01020304,0,0x60,0x02,64240,0,0)+bytes([2,4,5,0xb4])
//	print(hex(cs(ip)), hex(cs(src+dst+struct.pack('!BBH',0,6,len(tcp))+tcp)))
//	print(hex(s(src+dst+struct.pack('!BBH',0,6,len(tcp)))))"
//
// which prints 0x12d2 0xc798 (and 0x15e5, the partial checksum an offloading
// sender leaves). With total length 45 and a one-byte payload b'x' appended to
// tcp, it prints 0x12d1 0x4f97.

// testSYN returns a fresh copy of 10.77.0.101:40000 → 10.77.0.200:8080,
// ISN 0x01020304, window 64240, MSS 1460, with correct checksums.
func testSYN() []byte {
	return []byte{
		// IPv4: v4 IHL 5, total 44, id 0x1234, DF, TTL 64, TCP, checksum.
		0x45, 0x00, 0x00, 0x2c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x12, 0xd2,
		10, 77, 0, 101, 10, 77, 0, 200,
		// TCP: 40000 → 8080, seq, ack 0, data offset 6, SYN, window, checksum, urg.
		0x9c, 0x40, 0x1f, 0x90, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x00,
		0x60, 0x02, 0xfa, 0xf0, 0xc7, 0x98, 0x00, 0x00,
		// MSS 1460.
		0x02, 0x04, 0x05, 0xb4,
	}
}

// testSYNOdd is testSYN with a one-byte payload, so the TCP segment has odd
// length and the checksum's zero padding is exercised.
func testSYNOdd() []byte {
	p := append(testSYN(), 'x')
	p[3] = 45
	p[10], p[11] = 0x12, 0xd1
	p[36], p[37] = 0x4f, 0x97
	return p
}

var (
	testClient = netip.MustParseAddrPort("10.77.0.101:40000")
	testServer = netip.MustParseAddrPort("10.77.0.200:8080")
)

// ether wraps pkt in an Ethernet II header with the given ethertype, and an
// 802.1Q tag first when vlan is set.
func ether(etherType uint16, vlan bool, pkt []byte) []byte {
	f := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2}
	if vlan {
		f = append(f, 0x81, 0x00, 0x00, 0x2a)
	}
	f = binary.BigEndian.AppendUint16(f, etherType)
	return append(f, pkt...)
}

// synWith returns testSYN changed by edit; ihl is the IPv4 header length.
func synWith(edit func(p []byte, ihl int)) []byte {
	p := testSYN()
	edit(p, 20)
	return p
}

// withIPOptions returns testSYN with four bytes of IPv4 options (NOP NOP NOP
// EOL), so IHL is 6 and the TCP header starts at byte 24.
func withIPOptions() []byte {
	p := testSYN()
	opts := append(append([]byte{}, p[:20]...), 1, 1, 1, 0)
	opts[0] = 0x46
	opts[3] = 48
	p = append(opts, p[20:]...)
	if err := FixChecksums(p); err != nil {
		panic(err)
	}
	return p
}

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name    string
		frame   []byte
		wantErr error
		wantLen int // of SYN.Packet, when no error
	}{
		{"plain", ether(0x0800, false, testSYN()), nil, 44},
		{"vlan tag", ether(0x0800, true, testSYN()), nil, 44},
		{"ip options", ether(0x0800, false, withIPOptions()), nil, 48},
		{"link padding", append(ether(0x0800, false, testSYN()), 0, 0), nil, 44},
		{"odd payload", ether(0x0800, false, testSYNOdd()), nil, 45},
		{"short ethernet", make([]byte, 10), ErrTruncated, 0},
		{"short vlan", ether(0x8100, false, []byte{0}), ErrTruncated, 0},
		{"ipv6 ethertype", ether(0x86dd, false, testSYN()), ErrNotIPv4, 0},
		{"ip version 6", ether(0x0800, false, synWith(func(p []byte, _ int) { p[0] = 0x65 })), ErrNotIPv4, 0},
		{"truncated ip header", ether(0x0800, false, testSYN()[:19]), ErrTruncated, 0},
		{"truncated tcp", ether(0x0800, false, testSYN()[:40]), ErrTruncated, 0},
		{"ihl below 5", ether(0x0800, false, synWith(func(p []byte, _ int) { p[0] = 0x44 })), ErrMalformed, 0},
		{"ihl past total", ether(0x0800, false, synWith(func(p []byte, _ int) { p[0] = 0x4f })), ErrMalformed, 0},
		{"total past buffer", ether(0x0800, false, synWith(func(p []byte, _ int) { p[3] = 60 })), ErrTruncated, 0},
		{"tcp offset below 5", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+12] = 0x40 })), ErrMalformed, 0},
		{"tcp offset past end", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+12] = 0xf0 })), ErrTruncated, 0},
		{"more fragments", ether(0x0800, false, synWith(func(p []byte, _ int) { p[6] = 0x20 })), ErrFragment, 0},
		{"fragment offset", ether(0x0800, false, synWith(func(p []byte, _ int) { p[7] = 0x01 })), ErrFragment, 0},
		{"udp", ether(0x0800, false, synWith(func(p []byte, _ int) { p[9] = 17 })), ErrNotTCP, 0},
		{"syn-ack", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+13] = 0x12 })), ErrNotSYN, 0},
		{"ack", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+13] = 0x10 })), ErrNotSYN, 0},
		{"rst", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+13] = 0x04 })), ErrNotSYN, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syn, err := ParseFrame(tt.frame)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseFrame error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFrame: %v", err)
			}
			if syn.Client != testClient || syn.Server != testServer || syn.ISN != 0x01020304 {
				t.Errorf("got %v → %v ISN %#x, want %v → %v ISN 0x01020304",
					syn.Client, syn.Server, syn.ISN, testClient, testServer)
			}
			if len(syn.Packet) != tt.wantLen {
				t.Errorf("len(Packet) = %d, want %d", len(syn.Packet), tt.wantLen)
			}
			if !ValidChecksums(syn.Packet) {
				t.Errorf("Packet checksums invalid")
			}
		})
	}
}

func TestParseIPv4(t *testing.T) {
	pkt := testSYN()
	syn, err := ParseIPv4(pkt)
	if err != nil {
		t.Fatalf("ParseIPv4: %v", err)
	}
	if syn.Client != testClient || syn.Server != testServer || syn.ISN != 0x01020304 {
		t.Errorf("got %+v", syn)
	}
	if &syn.Packet[0] != &pkt[0] || len(syn.Packet) != len(pkt) {
		t.Errorf("Packet does not alias the whole input")
	}
}

func TestChecksumsKnownAnswer(t *testing.T) {
	tests := []struct {
		name string
		want []byte
	}{
		{"syn", testSYN()},
		{"odd length", testSYNOdd()},
		{"ip options", withIPOptions()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !ValidChecksums(tt.want) {
				t.Fatalf("ValidChecksums(known answer) = false")
			}
			ihl := int(tt.want[0]&0xf) * 4
			edits := map[string]func(p []byte){
				"zeroed": func(p []byte) {
					p[10], p[11], p[ihl+16], p[ihl+17] = 0, 0, 0, 0
				},
				"corrupted": func(p []byte) {
					p[10] ^= 0xff
					p[ihl+17] ^= 0x01
				},
				// What a sender with transmit checksum offload leaves in the
				// field: the pseudo-header sum, not complemented nor extended
				// over the segment (exact for the 24-byte segments).
				"partial": func(p []byte) {
					p[ihl+16], p[ihl+17] = 0x15, 0xe5
				},
			}
			for name, edit := range edits {
				p := bytes.Clone(tt.want)
				edit(p)
				if ValidChecksums(p) {
					t.Errorf("%s: ValidChecksums = true before fixing", name)
				}
				if err := FixChecksums(p); err != nil {
					t.Fatalf("%s: FixChecksums: %v", name, err)
				}
				if !bytes.Equal(p, tt.want) {
					t.Errorf("%s: fixed packet\n% x\nwant\n% x", name, p, tt.want)
				}
				if !ValidChecksums(p) {
					t.Errorf("%s: ValidChecksums = false after fixing", name)
				}
			}
		})
	}
}

func TestFixChecksumsRejects(t *testing.T) {
	tests := []struct {
		name    string
		pkt     []byte
		wantErr error
	}{
		{"truncated", testSYN()[:30], ErrTruncated},
		{"udp", synWith(func(p []byte, _ int) { p[9] = 17 }), ErrNotTCP},
		{"fragment", synWith(func(p []byte, _ int) { p[6] = 0x20 }), ErrFragment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := FixChecksums(tt.pkt); !errors.Is(err, tt.wantErr) {
				t.Errorf("FixChecksums error = %v, want %v", err, tt.wantErr)
			}
			if ValidChecksums(tt.pkt) {
				t.Errorf("ValidChecksums = true")
			}
		})
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(ether(0x0800, false, testSYN()))
	f.Add(ether(0x0800, true, testSYN()))
	f.Add(ether(0x0800, false, withIPOptions()))
	f.Add(ether(0x0800, false, testSYNOdd()))
	f.Add(ether(0x86dd, false, testSYN()))
	f.Add(ether(0x0800, false, testSYN()[:30]))
	f.Fuzz(func(t *testing.T, frame []byte) {
		syn, err := ParseFrame(frame)
		if len(frame) > ethHeaderLen {
			// Neither may panic, whatever the bytes.
			p := bytes.Clone(frame[ethHeaderLen:])
			if FixChecksums(p) == nil && !ValidChecksums(p) {
				t.Errorf("ValidChecksums = false after FixChecksums succeeded")
			}
		}
		if err != nil {
			return
		}
		if !within(frame, syn.Packet) {
			t.Fatalf("Packet (%d bytes) is not a sub-slice of the %d-byte frame", len(syn.Packet), len(frame))
		}
		again, err := ParseIPv4(syn.Packet)
		if err != nil || again.Client != syn.Client || again.Server != syn.Server || again.ISN != syn.ISN {
			t.Fatalf("ParseIPv4(Packet) = %+v, %v; want %+v", again, err, syn)
		}
	})
}

// within reports whether sub aliases a non-empty range of buf's elements.
func within(buf, sub []byte) bool {
	if len(sub) == 0 {
		return false
	}
	for off := 0; off+len(sub) <= len(buf); off++ {
		if &buf[off] == &sub[0] {
			return true
		}
	}
	return false
}
