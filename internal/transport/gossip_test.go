package transport

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func newTestMemberlist(t *testing.T, name string, m *Mux, k Key) *memberlist.Memberlist {
	t.Helper()
	conf := memberlist.DefaultLocalConfig()
	conf.Name = name
	conf.Transport = m.GossipTransport()
	conf.SecretKey = k.GossipKey()
	conf.LogOutput = io.Discard
	conf.TCPTimeout = 2 * time.Second
	conf.ProbeInterval = 200 * time.Millisecond
	conf.ProbeTimeout = 100 * time.Millisecond
	conf.GossipInterval = 20 * time.Millisecond
	conf.PushPullInterval = time.Second
	ml, err := memberlist.Create(conf)
	if err != nil {
		t.Fatalf("memberlist.Create(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	return ml
}

func TestGossipTransportContract(t *testing.T) {
	m := newTestMux(t, mustKey(t))
	tr := m.GossipTransport()
	if _, ok := tr.(memberlist.NodeAwareTransport); !ok {
		t.Fatal("gossip transport is not NodeAwareTransport")
	}
	if m.GossipTransport() != tr {
		t.Fatal("GossipTransport should return the live transport")
	}
	ip, port, err := tr.FinalAdvertiseAddr("", 7946)
	if err != nil || net.JoinHostPort(ip.String(), fmt.Sprint(port)) != m.Addr() {
		t.Fatalf("FinalAdvertiseAddr(\"\") = %v %d %v", ip, port, err)
	}
	ip, port, err = tr.FinalAdvertiseAddr("10.0.0.9", 1234)
	if err != nil || ip.String() != "10.0.0.9" || len(ip) != 4 || port != 1234 {
		t.Fatalf("FinalAdvertiseAddr(explicit) = %v %d %v", ip, port, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("bogus", 1); err == nil {
		t.Fatal("bad ip accepted")
	}

	// Packets from a plain UDP socket arrive with a copied buffer.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.WriteTo([]byte("pkt"), m.udp.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-tr.PacketCh():
		if string(p.Buf) != "pkt" || p.From.String() != pc.LocalAddr().String() || p.Timestamp.IsZero() {
			t.Fatalf("packet %q from %v at %v", p.Buf, p.From, p.Timestamp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no packet")
	}
	// WriteTo reaches a plain UDP socket.
	if _, err := tr.WriteTo([]byte("out"), pc.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "out" || from.(*net.UDPAddr).Port != m.advertise.Port {
		t.Fatalf("read %q from %v: %v", buf[:n], from, err)
	}

	// Shutdown stops the transport but not the mux.
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.WriteTo([]byte("x"), pc.LocalAddr().String()); err == nil {
		t.Fatal("WriteTo after Shutdown succeeded")
	}
	tr2 := m.GossipTransport()
	if tr2 == tr {
		t.Fatal("GossipTransport after Shutdown returned the stopped transport")
	}
	c, err := tr2.DialTimeout(m.Addr(), 5*time.Second) // dial ourselves
	if err != nil {
		t.Fatalf("DialTimeout after old transport shutdown: %v", err)
	}
	defer c.Close()
	select {
	case sc := <-tr2.StreamCh():
		sc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("stream not delivered to the new transport")
	}
}

func TestMemberlistOverMux(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)
	mla := newTestMemberlist(t, "a", a, k)
	mlb := newTestMemberlist(t, "b", b, k)

	if n, err := mlb.Join([]string{a.Addr()}); err != nil || n != 1 {
		t.Fatalf("Join: %d %v", n, err)
	}
	eventually(t, 10*time.Second, "both see 2 members", func() bool {
		return mla.NumMembers() == 2 && mlb.NumMembers() == 2
	})
	if got := mla.LocalNode().Address(); got != a.Addr() {
		t.Fatalf("memberlist advertises %s, mux %s", got, a.Addr())
	}

	// A node with another cluster key cannot join.
	other := mustKey(t)
	c := newTestMux(t, other)
	mlc := newTestMemberlist(t, "c", c, other)
	if n, err := mlc.Join([]string{a.Addr()}); err == nil {
		t.Fatalf("join with a different key succeeded (%d)", n)
	}
	if mlc.NumMembers() != 1 || mla.NumMembers() != 2 {
		t.Fatalf("members: c=%d a=%d", mlc.NumMembers(), mla.NumMembers())
	}
	// The client side fails first; a's server side counts asynchronously.
	eventually(t, 5*time.Second, "handshake failure on a", func() bool { return a.HandshakeFailures() > 0 })

	// memberlist shutdown must leave the mux usable.
	if err := mlb.Leave(time.Second); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if err := mlb.Shutdown(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a sees b leave", func() bool { return mla.NumMembers() == 1 })
	conn, err := b.Dial(dialCtx(t), a.Addr(), ProtoHTTP)
	if err != nil {
		t.Fatalf("mux unusable after memberlist shutdown: %v", err)
	}
	conn.Close()
	mlb2 := newTestMemberlist(t, "b2", b, k)
	if _, err := mlb2.Join([]string{a.Addr()}); err != nil {
		t.Fatalf("rejoin on the same mux: %v", err)
	}
	eventually(t, 10*time.Second, "rejoined", func() bool {
		return mla.NumMembers() == 2 && mlb2.NumMembers() == 2
	})
}
