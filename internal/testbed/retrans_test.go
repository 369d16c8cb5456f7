package testbed

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mure-dev/mure/internal/dsc"
)

// TestSingleAddressRetransmittedSYN: a client's SYN put on the wire again
// (the same address, port and sequence number, as a client retransmits it)
// must reach the node that holds its half-open connection, or the client
// would get a second, different SYN-ACK. Raw SYNs from 7 client ports are
// each sent three times: the first copy is placed by round robin; the
// second, within the master's table lifetime, goes where the table says;
// the third goes after the master's node was killed, to the successor, which
// has rebuilt its table from the surviving nodes' SYN_RECV connections. Every
// port held by a surviving node must have seen exactly one SYN-ACK sequence
// number throughout.
func TestSingleAddressRetransmittedSYN(t *testing.T) {
	for _, path := range synPaths {
		t.Run(path, func(t *testing.T) { testRetransmittedSYN(t, path) })
	}
}

func testRetransmittedSYN(t *testing.T, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tb, cip := upSingle(t, ctx, "mtbr-", "10.77.190.0/24", 1, path)
	defer tb.Down(context.Background())
	client := tb.Clients()[0]
	// The client's kernel knows none of these handshakes: its RSTs would
	// end them at the nodes.
	if out, err := inNS(ctx, client.NS, "iptables", "-A", "OUTPUT", "-p", "tcp", "-d", cip, "--tcp-flags", "RST", "RST", "-j", "DROP"); err != nil {
		t.Fatalf("iptables in %s: %v\n%s", client.NS, err, out)
	}
	raw, err := openRaw(client.NS)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.close()
	src := netip.MustParseAddr(client.HubAddr)
	dst := netip.MustParseAddr(cip)
	var ports []uint16
	for p := uint16(40001); p <= 40007; p++ {
		ports = append(ports, p)
	}
	decoy := uint16(41000)
	seen := map[uint16]map[uint32]bool{} // port → SYN-ACK sequence numbers
	round := func(what string) {
		t.Helper()
		for _, p := range ports {
			if err := raw.sendSYN(src, dst, p, 8080, 1000+uint32(p)); err != nil {
				t.Fatalf("%s: send a SYN from port %d: %v", what, p, err)
			}
		}
		got := raw.synAcks(dst, 8080, ports, 3*time.Second)
		for _, p := range ports {
			if _, ok := got[p]; !ok {
				t.Fatalf("%s: no SYN-ACK for port %d within 3 s (got %v)", what, p, got)
			}
			if seen[p] == nil {
				seen[p] = map[uint32]bool{}
			}
			maps.Copy(seen[p], got[p])
		}
	}
	round("first SYNs")
	// Later rounds send the ports in the reverse order, after a new
	// connection's SYN: placed by the policy instead of the table, the
	// retransmissions would not land where the first copies did.
	slices.Reverse(ports)
	next := func() {
		t.Helper()
		decoy++
		if err := raw.sendSYN(src, dst, decoy, 8080, 7); err != nil {
			t.Fatal(err)
		}
	}
	next()
	// The kernel answers a repeated SYN at most every 0.5 s per handshake
	// (net.ipv4.tcp_invalid_ratelimit).
	time.Sleep(600 * time.Millisecond)
	round("retransmitted SYNs")
	holder := halfOpenHolders(t, ctx, tb, netip.AddrPortFrom(dst, 8080), src)
	perNode := map[string]int{}
	for _, p := range ports {
		if len(seen[p]) != 1 {
			t.Fatalf("port %d saw SYN-ACK sequence numbers %v: its retransmission reached another node", p, slices.Collect(maps.Keys(seen[p])))
		}
		perNode[holder[p]]++
	}
	if len(perNode) != 3 || perNode[""] != 0 || slices.Min(slices.Collect(maps.Values(perNode))) < 2 {
		t.Fatalf("half-open connections per node %v: want the 7 spread over the 3 nodes by round robin", perNode)
	}

	master := masterHost(ctx, t, tb)
	before := map[*Host]singleStats{}
	for _, h := range tb.Servers() {
		if before[h], err = singleStatus(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Signal(master, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var successor *Host
	var st singleStats
	waitFor(t, "a successor master that rebuilt its table", func() bool {
		for _, h := range tb.Servers() {
			if h != master {
				if s, err := singleStatus(ctx, h); err == nil && s.Master && s.Rebuilds > before[h].Rebuilds {
					successor, st = h, s
					st.Rebuilt -= before[h].Rebuilt
					return true
				}
			}
		}
		return false
	})
	// The survivors' ports, grouped by holder: placed by the policy
	// instead of the table, two in a row would not both reach their holder.
	var kept []uint16
	for _, h := range tb.Servers() {
		for _, p := range ports {
			if h != master && holder[p] == h.Name {
				kept = append(kept, p)
			}
		}
	}
	if st.Rebuilt < uint64(len(kept)) {
		t.Fatalf("%s rebuilt its table from %d half-open connections; the survivors hold %d", successor.Name, st.Rebuilt, len(kept))
	}
	ports = kept // the dead node's handshakes died with it
	next()
	round("SYNs retransmitted after the master changed")
	for _, p := range ports {
		if len(seen[p]) != 1 {
			t.Fatalf("after the master change, port %d (held by %s) saw SYN-ACK sequence numbers %v",
				p, holder[p], slices.Collect(maps.Keys(seen[p])))
		}
	}
	t.Logf("7 raw SYNs, each sent twice to master %s, one SYN-ACK sequence each (held per node: %v); after %s was killed, %s rebuilt its table from %d half-open connections and the %d SYNs held by survivors, sent a third time, still saw one sequence number each",
		master.Name, perNode, master.Name, successor.Name, st.Rebuilt, len(ports))
}

// halfOpenHolders maps each client port of src to the server whose kernel
// holds its half-open connection to cluster.
func halfOpenHolders(t *testing.T, ctx context.Context, tb *Testbed, cluster netip.AddrPort, src netip.Addr) map[uint16]string {
	t.Helper()
	out := map[uint16]string{}
	for _, h := range tb.Servers() {
		text, err := inNS(ctx, h.NS, "cat", "/proc/net/tcp")
		if err != nil {
			t.Fatalf("/proc/net/tcp of %s: %v", h.Name, err)
		}
		clients, err := dsc.ParseHalfOpen(strings.NewReader(text), cluster)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range clients {
			if c.Addr() == src {
				// (/proc/net/tcp is no atomic snapshot: an entry can be
				// listed twice by the same node.)
				if prev, ok := out[c.Port()]; ok && prev != h.Name {
					t.Fatalf("port %d is half-open on both %s and %s", c.Port(), prev, h.Name)
				}
				out[c.Port()] = h.Name
			}
		}
	}
	return out
}

// rawConn sends hand-made IPv4 TCP segments and reads every TCP segment
// that arrives, both from inside a network namespace.
type rawConn struct{ send, recv int }

func openRaw(ns string) (*rawConn, error) {
	type result struct {
		c   *rawConn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// never unlocked: the thread, left in ns, ends with the goroutine
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("enter %s: %w", ns, err)}
			return
		}
		send, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		if err != nil {
			done <- result{err: fmt.Errorf("raw socket: %w", err)}
			return
		}
		recv, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			unix.Close(send)
			done <- result{err: fmt.Errorf("raw socket: %w", err)}
			return
		}
		tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(recv, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			unix.Close(send)
			unix.Close(recv)
			done <- result{err: err}
			return
		}
		done <- result{c: &rawConn{send: send, recv: recv}}
	}()
	r := <-done
	return r.c, r.err
}

func (r *rawConn) close() {
	unix.Close(r.send)
	unix.Close(r.recv)
}

// sendSYN puts a SYN from src:sport to dst:dport with sequence number isn
// on the wire.
func (r *rawConn) sendSYN(src, dst netip.Addr, sport, dport uint16, isn uint32) error {
	pkt := make([]byte, 40)
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_TCP
	binary.BigEndian.PutUint16(pkt[2:], 40)
	binary.BigEndian.PutUint16(pkt[6:], 0x4000) // don't fragment
	s, d := src.As4(), dst.As4()
	copy(pkt[12:], s[:])
	copy(pkt[16:], d[:])
	tcp := pkt[20:]
	binary.BigEndian.PutUint16(tcp[0:], sport)
	binary.BigEndian.PutUint16(tcp[2:], dport)
	binary.BigEndian.PutUint32(tcp[4:], isn)
	tcp[12], tcp[13] = 5<<4, 0x02 // header length, SYN
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	if err := dsc.FixChecksums(pkt); err != nil {
		return err
	}
	return unix.Sendto(r.send, pkt, 0, &unix.SockaddrInet4{Addr: d})
}

// synAcks collects the sequence numbers of the SYN-ACKs from from:port to
// each of ports for at least a second (a SYN placed on a second node would
// be answered within it) and at most wait, until every port has one.
func (r *rawConn) synAcks(from netip.Addr, port uint16, ports []uint16, wait time.Duration) map[uint16]map[uint32]bool {
	got := map[uint16]map[uint32]bool{}
	buf := make([]byte, 2048)
	start := time.Now()
	for time.Since(start) < wait && (time.Since(start) < time.Second || len(got) < len(ports)) {
		n, _, err := unix.Recvfrom(r.recv, buf, 0)
		if err != nil || n < 20 {
			continue // the receive timeout
		}
		pkt := buf[:n]
		ihl := int(pkt[0]&0x0f) * 4
		if len(pkt) < ihl+20 || netip.AddrFrom4([4]byte(pkt[12:16])) != from {
			continue
		}
		tcp := pkt[ihl:]
		sport, dport, flags := binary.BigEndian.Uint16(tcp[0:]), binary.BigEndian.Uint16(tcp[2:]), tcp[13]
		if sport != port || flags&0x12 != 0x12 || !slices.Contains(ports, dport) {
			continue
		}
		if got[dport] == nil {
			got[dport] = map[uint32]bool{}
		}
		got[dport][binary.BigEndian.Uint32(tcp[4:])] = true
	}
	return got
}
