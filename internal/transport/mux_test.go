package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

func TestListenSamePortTCPUDP(t *testing.T) {
	m := newTestMux(t, mustKey(t))
	tcpPort := m.tcp.Addr().(*net.TCPAddr).Port
	udpPort := m.udp.LocalAddr().(*net.UDPAddr).Port
	if tcpPort != udpPort {
		t.Fatalf("tcp port %d != udp port %d", tcpPort, udpPort)
	}
	if want := fmt.Sprintf("127.0.0.1:%d", tcpPort); m.Addr() != want {
		t.Fatalf("Addr() = %q, want %q", m.Addr(), want)
	}
	for _, p := range []byte{ProtoRaft, ProtoGossip, ProtoHTTP} {
		a, ok := m.Listener(p).Addr().(*net.TCPAddr)
		if !ok || a.String() != m.Addr() {
			t.Fatalf("Listener(%q).Addr() = %v", p, m.Listener(p).Addr())
		}
	}
	if m.Listener('X') != nil {
		t.Fatal("Listener of unknown proto should be nil")
	}
}

func TestResolveAdvertise(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4zero, Port: 4000}
	a, err := resolveAdvertise("", bound)
	if err != nil {
		t.Fatal(err)
	}
	if a.IP.IsUnspecified() || a.IP.To4() == nil || a.Port != 4000 {
		t.Fatalf("unspecified bind advertised as %v", a)
	}
	a, err = resolveAdvertise("10.1.2.3:7000", bound)
	if err != nil || a.String() != "10.1.2.3:7000" {
		t.Fatalf("explicit advertise: %v %v", a, err)
	}
	for _, bad := range []string{"node1:7000", "10.1.2.3", "0.0.0.0:7000", "10.1.2.3:0", "10.1.2.3:x"} {
		if _, err := resolveAdvertise(bad, bound); err == nil {
			t.Errorf("advertise %q accepted", bad)
		}
	}
	m, err := Listen(Config{BindAddr: "127.0.0.1:0", AdvertiseAddr: "10.9.8.7:1234", Key: mustKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != "10.9.8.7:1234" {
		t.Fatalf("Addr() = %q", m.Addr())
	}
}

func TestMuxRoutesAndEchoes(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)
	accA := acceptAll(t, a)
	accB := acceptAll(t, b)

	for _, dir := range []struct {
		name     string
		from, to *Mux
		acc      <-chan routedConn
	}{{"b->a", b, a, accA}, {"a->b", a, b, accB}} {
		for _, p := range []byte{ProtoRaft, ProtoGossip, ProtoHTTP} {
			t.Run(fmt.Sprintf("%s/%c", dir.name, p), func(t *testing.T) {
				c, err := dir.from.Dial(dialCtx(t), dir.to.Addr(), p)
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				defer c.Close()
				msg := []byte("hello over " + string(p))
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				var rc routedConn
				select {
				case rc = <-dir.acc:
				case <-time.After(5 * time.Second):
					t.Fatal("no conn accepted")
				}
				defer rc.conn.Close()
				if rc.proto != p {
					t.Fatalf("conn dialed with %q arrived on %q listener", p, rc.proto)
				}
				if _, ok := rc.conn.(*tls.Conn); !ok {
					t.Fatalf("accepted conn is %T, want *tls.Conn", rc.conn)
				}
				_ = rc.conn.SetDeadline(time.Now().Add(5 * time.Second))
				if err := echoOnce(rc.conn, len(msg)); err != nil {
					t.Fatalf("server echo: %v", err)
				}
				got := make([]byte, len(msg))
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
					t.Fatalf("client read %q, %v", got, err)
				}
			})
		}
	}
	if n := a.HandshakeFailures() + b.HandshakeFailures(); n != 0 {
		t.Fatalf("%d handshake failures between same-key muxes", n)
	}
}

func TestMuxWrongKeyRejected(t *testing.T) {
	a := newTestMux(t, mustKey(t))
	c := newTestMux(t, mustKey(t))

	if conn, err := c.Dial(dialCtx(t), a.Addr(), ProtoRaft); err == nil {
		conn.Close()
		t.Fatal("dial with a different key succeeded")
	}
	eventually(t, 5*time.Second, "handshake failure counted", func() bool { return a.HandshakeFailures() >= 1 })
	if n := a.routed.Load(); n != 0 {
		t.Fatalf("%d conns delivered to sub-listeners after a failed handshake", n)
	}
	// And the other way round.
	if conn, err := a.Dial(dialCtx(t), c.Addr(), ProtoHTTP); err == nil {
		conn.Close()
		t.Fatal("dial with a different key succeeded")
	}
	eventually(t, 5*time.Second, "handshake failure counted", func() bool { return c.HandshakeFailures() >= 1 })
	if n := c.routed.Load(); n != 0 {
		t.Fatalf("%d conns delivered after a failed handshake", n)
	}
}

func TestMuxGarbageAndSlowClients(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)
	acc := acceptAll(t, a)

	// A silent client that never starts a handshake must not block Accept.
	silent, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// A client sending garbage is closed.
	garbage, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	if _, err := garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = garbage.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(garbage)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("garbage client was not closed")
	}
	eventually(t, 5*time.Second, "garbage counted", func() bool { return a.HandshakeFailures() >= 1 })

	// A good client still gets through.
	c, err := b.Dial(dialCtx(t), a.Addr(), ProtoGossip)
	if err != nil {
		t.Fatalf("good dial after bad clients: %v", err)
	}
	defer c.Close()
	select {
	case rc := <-acc:
		rc.conn.Close()
		if rc.proto != ProtoGossip {
			t.Fatalf("arrived on %q", rc.proto)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("good conn not accepted")
	}
}

func TestMuxUnknownProtoClosed(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)
	if _, err := b.Dial(dialCtx(t), a.Addr(), 'X'); err == nil {
		t.Fatal("Dial with unknown proto succeeded")
	}
	// Bypass Dial's check: a keyed TLS client selecting 'X' is closed.
	_, client, err := TLSConfigs(k)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(raw, client)
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Write([]byte{'X'}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after unknown proto: %v, want EOF", err)
	}
	if n := a.routed.Load(); n != 0 {
		t.Fatalf("%d conns routed", n)
	}
}

func TestMuxClose(t *testing.T) {
	k := mustKey(t)
	a, err := Listen(Config{BindAddr: "127.0.0.1:0", Key: k})
	if err != nil {
		t.Fatal(err)
	}
	b := newTestMux(t, k)
	// A half-open handshake must not delay Close.
	silent, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	eventually(t, 5*time.Second, "conn tracked", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.pending) == 1
	})

	done := make(chan error, 1)
	go func() {
		_, err := a.Listener(ProtoRaft).Accept()
		done <- err
	}()
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Dial(context.Background(), b.Addr(), ProtoRaft); err == nil {
		t.Fatal("Dial on closed mux succeeded")
	}
	if _, err := b.Dial(dialCtx(t), a.Addr(), ProtoRaft); err == nil {
		t.Fatal("Dial to closed mux succeeded")
	}
}
