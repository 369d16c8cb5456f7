package transport

import (
	"crypto/ed25519"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// handshakePair runs a TLS handshake over an in-memory pipe and returns
// the server and client errors.
func handshakePair(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	sc, cc := tcpPair(t)
	defer sc.Close()
	defer cc.Close()
	deadline := time.Now().Add(5 * time.Second)
	_ = sc.SetDeadline(deadline)
	_ = cc.SetDeadline(deadline)
	errc := make(chan error, 1)
	go func() {
		s := tls.Server(sc, server)
		err := s.Handshake()
		if err == nil {
			// Read the client's first byte so a late client-side
			// rejection (TLS 1.3) surfaces too.
			var b [1]byte
			_, err = s.Read(b[:])
		}
		if err != nil {
			_ = sc.Close()
		}
		errc <- err
	}()
	c := tls.Client(cc, client)
	clientErr = c.Handshake()
	if clientErr == nil {
		_, clientErr = c.Write([]byte{'x'})
	}
	if clientErr != nil {
		_ = cc.Close()
	}
	return <-errc, clientErr
}

// tcpPair returns both ends of a loopback TCP connection (kernel-buffered,
// unlike net.Pipe, so TLS alerts never block).
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		_ = client.Close()
		t.Fatal(err)
	}
	return server, client
}

func TestTLSSameKey(t *testing.T) {
	k := mustKey(t)
	s, _, err := TLSConfigs(k)
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := TLSConfigs(k) // a second derivation, as on another node
	if err != nil {
		t.Fatal(err)
	}
	serr, cerr := handshakePair(t, s, c)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake failed: server=%v client=%v", serr, cerr)
	}
}

func TestTLSDifferentKeysFail(t *testing.T) {
	s1, c1, err := TLSConfigs(mustKey(t))
	if err != nil {
		t.Fatal(err)
	}
	s2, c2, err := TLSConfigs(mustKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][2]*tls.Config{"1->2": {s2, c1}, "2->1": {s1, c2}} {
		serr, cerr := handshakePair(t, p[0], p[1])
		if serr == nil || cerr == nil {
			t.Errorf("%s: handshake should fail on both sides: server=%v client=%v", name, serr, cerr)
		}
	}
}

func TestTLSClientWithoutCertRejected(t *testing.T) {
	s, _, err := TLSConfigs(mustKey(t))
	if err != nil {
		t.Fatal(err)
	}
	anon := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} //nolint:gosec // test
	if serr, _ := handshakePair(t, s, anon); serr == nil {
		t.Fatal("server accepted a client without certificate")
	}
}

func TestClusterCertificateDeterministicKey(t *testing.T) {
	k := mustKey(t)
	c1, p1, err := clusterCertificate(k)
	if err != nil {
		t.Fatal(err)
	}
	_, p2, err := clusterCertificate(k)
	if err != nil {
		t.Fatal(err)
	}
	if !p1.Equal(p2) {
		t.Fatal("public key not deterministic")
	}
	if !c1.Leaf.PublicKey.(ed25519.PublicKey).Equal(p1) {
		t.Fatal("certificate does not carry the derived key")
	}
	if c1.Leaf.Subject.CommonName != certCommonName {
		t.Fatalf("CN = %q", c1.Leaf.Subject.CommonName)
	}
}
