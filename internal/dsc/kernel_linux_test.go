package dsc

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// kernelTestPath loads the program (root needed) for SYNs to testServer,
// with the loopback interface as the redirect target.
func kernelTestPath(t *testing.T) *kernelPath {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program needs root")
	}
	mac := net.HardwareAddr{0x02, 0x00, 10, 77, 0, 200}
	k, err := loadKernelPath("lo", testServer.Addr(), testServer.Port(), mac)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(k.close)
	return k
}

// runKernel runs the program on frame and returns its verdict and the frame
// as the program left it.
func runKernel(t *testing.T, k *kernelPath, frame []byte) (int, []byte) {
	t.Helper()
	out := make([]byte, len(frame)+64)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := k.prog.Run(opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return int(int32(ret)), opts.DataOut
}

// clientSYN is testSYN from client port, with ISN isn, in an Ethernet frame
// from a client MAC.
func clientSYN(port uint16, isn uint32) []byte {
	p := testSYN()
	binary.BigEndian.PutUint16(p[20:], port)
	binary.BigEndian.PutUint32(p[24:], isn)
	if err := FixChecksums(p); err != nil {
		panic(err)
	}
	return ether(0x0800, false, p)
}

const tcxRedirect = 7

// TestKernelPathMaster runs the program as the master of three nodes (ranks
// 0, 1, 2; itself rank 1) on hand-made frames.
func TestKernelPathMaster(t *testing.T) {
	k := kernelTestPath(t)
	conf := kernelConfig{Lease: time.Minute, Master: 1, Self: 1, Ring: []int{0, 1, 2}}
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	tagOf := func(frame []byte) (master, rank byte) { return frame[14+4], frame[14+5] }

	// Three new connections take the ring in turn; the frame leaves tagged,
	// from the cluster MAC, with a valid IP checksum; the master's own pick
	// goes up its stack, the others back out on the segment.
	for i, want := range []struct {
		rank    byte
		verdict int
	}{{0, tcxRedirect}, {1, tcxPass}, {2, tcxRedirect}} {
		verdict, out := runKernel(t, k, clientSYN(40000+uint16(i), 1))
		if verdict != want.verdict {
			t.Fatalf("SYN %d: verdict %d, want %d (frame %x, stats %+v)", i, verdict, want.verdict, out, k.stats())
		}
		if m, r := tagOf(out); m != 1 || r != want.rank {
			t.Fatalf("SYN %d: tag %d/%d, want master 1, rank %d", i, m, r, want.rank)
		}
		if !bytes.Equal(out[6:12], k.mac) {
			t.Fatalf("SYN %d: source MAC %x, want the cluster's %x", i, out[6:12], k.mac)
		}
		if !ValidChecksums(out[14:]) {
			t.Fatalf("SYN %d: checksums broken by the tag", i)
		}
	}
	// On a veth the SYN goes straight into the peer's ingress: also a redirect.
	k.veth = true
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	if verdict, out := runKernel(t, k, clientSYN(40003, 1)); verdict != tcxRedirect || out[19] != 0 {
		t.Fatalf("on a veth: verdict %d, rank %d; want a redirect to rank 0", verdict, out[19])
	}
	k.veth = false
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	// A retransmission goes to the same node, however the ring moved.
	if _, out := runKernel(t, k, clientSYN(40000, 1)); out[19] != 0 {
		t.Fatalf("retransmitted SYN placed on rank %d, want 0 (where its first copy went)", out[19])
	}
	// ... unless that node has died meanwhile (it leaves the ring too).
	conf.Ring = []int{1, 2}
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	if _, out := runKernel(t, k, clientSYN(40000, 1)); out[19] == 0 {
		t.Fatal("retransmitted SYN sent to a dead node")
	}
	// A table entry a new master wrote (its rebuild) is followed.
	if err := k.remember(map[int][]netip.AddrPort{2: {netip.AddrPortFrom(testClient.Addr(), 40100)}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, out := runKernel(t, k, clientSYN(40100, 1)); out[19] != 2 {
			t.Fatalf("a rebuilt entry's SYN placed on rank %d, want 2", out[19])
		}
	}

	// Not ours: passed on untouched.
	placed := ether(0x0800, false, testSYN())
	copy(placed[6:12], k.mac)
	ack := clientSYN(40200, 1)
	ack[14+33] |= 0x10
	other := clientSYN(40201, 1)
	other[14+23]++ // destination port 8081
	for name, frame := range map[string][]byte{
		"SYN from the cluster MAC (placed by a master already)": placed,
		"SYN-ACK":          ack,
		"another port":     other,
		"IPv6":             ether(0x86dd, false, testSYN()),
		"IPv4 options":     ether(0x0800, false, withIPOptions()),
		"truncated header": clientSYN(40202, 1)[:40],
	} {
		in := bytes.Clone(frame)
		verdict, out := runKernel(t, k, frame)
		if verdict != tcxNext || !bytes.Equal(out, in) {
			t.Errorf("%s: verdict %d (want %d), changed %v", name, verdict, tcxNext, !bytes.Equal(out, in))
		}
	}

	// A SYN another master placed on this node: taken, and counted.
	tagged := clientSYN(40400, 1)
	copy(tagged[6:12], k.mac)
	tagged[18], tagged[19] = 1, 1
	if verdict, _ := runKernel(t, k, tagged); verdict != tcxPass {
		t.Fatalf("a SYN tagged for this node: verdict %d, want %d", verdict, tcxPass)
	}

	// Without a valid lease (a paused master's ran out) nothing is placed.
	conf.Lease = 0
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	if verdict, out := runKernel(t, k, clientSYN(40300, 1)); verdict != tcxNext || out[18] != 0x12 {
		t.Fatalf("without a lease: verdict %d, IP ID %x; want it untouched", verdict, out[18:20])
	}
	st := k.stats()
	if st.Placed != 5 || st.Retransmitted != 3 || st.Expired != 1 || st.Accepted != 3 {
		t.Fatalf("counters %+v, want 5 placed, 3 retransmitted, 1 expired, 3 accepted (its own two picks and the tagged SYN)", st)
	}
}

// TestKernelPathISN: the static baseline takes the SYNs whose ISN modulo the
// ring's length is this node's place, and leaves the others.
func TestKernelPathISN(t *testing.T) {
	k := kernelTestPath(t)
	if err := k.configure(kernelConfig{ISN: true, Master: 1, Self: 1, Ring: []int{0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	mine := 0
	for isn := uint32(1000); isn < 1030; isn++ {
		verdict, out := runKernel(t, k, clientSYN(41000, isn))
		want := tcxNext
		if isn%3 == 1 {
			want = tcxPass
			mine++
			if out[18] != 1 || out[19] != 1 || !ValidChecksums(out[14:]) {
				t.Fatalf("ISN %d: tag %x, checksums ok %v", isn, out[18:20], ValidChecksums(out[14:]))
			}
		}
		if verdict != want {
			t.Fatalf("ISN %d: verdict %d, want %d", isn, verdict, want)
		}
	}
	if mine != 10 {
		t.Fatalf("took %d of 30", mine)
	}
}

func TestSYNKeyMatchesTheProgram(t *testing.T) {
	// The program stores the client address as on the wire and the port
	// widened from a native 16-bit load; remember must write the same.
	key := synKey(netip.MustParseAddrPort("10.1.2.3:40000"))
	if !bytes.Equal(key[:4], []byte{10, 1, 2, 3}) {
		t.Fatalf("address bytes %x", key[:4])
	}
	port := binary.NativeEndian.Uint32(key[4:])
	if got := binary.NativeEndian.Uint16([]byte{0x9c, 0x40}); port != uint32(got) {
		t.Fatalf("port word %x, want %x", port, got)
	}
}

// TestKernelPathLeastConnections: new connections go to the live rank with
// the fewest connections (its report plus what was placed on it since) until
// the ranks are even.
func TestKernelPathLeastConnections(t *testing.T) {
	k := kernelTestPath(t)
	conf := kernelConfig{Lease: time.Minute, Master: 1, Self: 1, Ring: []int{0, 1, 2},
		Policy: policyLC, Load: map[int]int64{0: 5, 1: 1, 2: 3}}
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		runKernel(t, k, clientSYN(42000+uint16(i), 1))
	}
	if got := k.placedByRank(); got[0] != 0 || got[1] != 4 || got[2] != 2 {
		t.Fatalf("placed per rank %v, want 0, 4, 2 (5+0 = 1+4 = 3+2)", got[:3])
	}
	// A dead rank gets nothing, however few it holds.
	conf.Ring, conf.Load = []int{1, 2}, map[int]int64{0: -100, 1: 1, 2: 3}
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, out := runKernel(t, k, clientSYN(42100+uint16(i), 1)); out[19] == 0 {
			t.Fatal("least connections chose a dead rank")
		}
	}
}

// TestKernelPathP2C: of two random live ranks the less loaded wins, so a
// rank far above the other gets only the draws where both picks are it
// (a quarter, on average).
func TestKernelPathP2C(t *testing.T) {
	k := kernelTestPath(t)
	conf := kernelConfig{Lease: time.Minute, Master: 1, Self: 1, Ring: []int{0, 1},
		Policy: policyP2C, Load: map[int]int64{0: 0, 1: 1000}}
	if err := k.configure(conf); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		runKernel(t, k, clientSYN(43000+uint16(i), 1))
	}
	got := k.placedByRank()
	if got[0]+got[1] != 200 || got[0] < 120 || got[1] == 0 {
		t.Fatalf("placed per rank %v: want about 150 and 50 (both picks random, the lower wins)", got[:2])
	}
}
