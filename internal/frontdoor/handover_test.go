package frontdoor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/socket"
)

func TestVerifyPreamble(t *testing.T) {
	key := []byte("the cluster's hand-over key")
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	client := netip.MustParseAddrPort("192.0.2.7:40001")
	v := &Verifier{Key: key, Dispatcher: func() string { return "d1" }, Now: func() time.Time { return now }}
	line := func(b []byte) string { return strings.TrimRight(string(b), "\r\n") }
	for _, tc := range []struct {
		name string
		line string
		want error
	}{
		{"valid", line(Preamble(key, "d1", client, now)), nil},
		{"valid, clock 59 s apart", line(Preamble(key, "d1", client, now.Add(-59*time.Second))), nil},
		{"other key", line(Preamble([]byte("another"), "d1", client, now)), errBadMAC},
		{"not the recognised dispatcher", line(Preamble(key, "d2", client, now)), errNotRecognise},
		{"too old", line(Preamble(key, "d1", client, now.Add(-2*time.Minute))), errStale},
		{"from the future", line(Preamble(key, "d1", client, now.Add(2*time.Minute))), errStale},
		{"tampered client", strings.Replace(line(Preamble(key, "d1", client, now)), "192.0.2.7", "192.0.2.8", 1), errBadMAC},
		{"no mac", "MURE-HANDOVER/1 d1 192.0.2.7:40001 1", errBadMAC},
		{"nothing", "", errBadPreamble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := v.verify(tc.line)
			if !errors.Is(err, tc.want) {
				t.Fatalf("verify = %v, want %v", err, tc.want)
			}
			if err == nil && got != client {
				t.Fatalf("client %v, want %v", got, client)
			}
		})
	}
}

// TestAcceptHandovers: behind the wrapper, an ordinary HTTP client and a
// relayed one are both served, the relayed one as the client; a forged
// preamble is answered 421.
func TestAcceptHandovers(t *testing.T) {
	key := []byte("k")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rejected := make(chan string, 8)
	ln := AcceptHandovers(raw, &Verifier{Key: key, Dispatcher: func() string { return "d1" }}, func(r string) { rejected <- r })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.RemoteAddr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	ask := func(prefix string) (*http.Response, string) {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%sGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", prefix)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := ask(""); resp.StatusCode != 200 || !strings.HasPrefix(body, "127.0.0.1:") {
		t.Fatalf("ordinary client: %d %q", resp.StatusCode, body)
	}
	client := netip.MustParseAddrPort("198.51.100.9:5555")
	if resp, body := ask(string(Preamble(key, "d1", client, time.Now()))); resp.StatusCode != 200 || body != client.String() {
		t.Fatalf("relayed client: %d %q, want 200 %s", resp.StatusCode, body, client)
	}
	if resp, _ := ask(string(Preamble(key, "d9", client, time.Now()))); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("preamble from another dispatcher: %d, want 421", resp.StatusCode)
	}
	if r := <-rejected; r != "not_dispatcher" || len(rejected) != 0 {
		t.Fatalf("rejection counted as %q (%d more), want one not_dispatcher", r, len(rejected))
	}
}

// TestHandoverReadTCP: a connection behind the hand-over wrapper gives its
// socket for reads only once Read has given back what the wrapper read
// first (the preamble's request included), and the bytes read by both ways
// follow each other.
func TestHandoverReadTCP(t *testing.T) {
	key := []byte("k")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ln := AcceptHandovers(LimitConns(raw, 0, nil), &Verifier{Key: key, Dispatcher: func() string { return "d1" }}, nil)
	client := netip.MustParseAddrPort("198.51.100.9:5555")
	for _, tc := range []struct{ name, prefix string }{
		{"ordinary client", ""},
		{"handed over", string(Preamble(key, "d1", client, time.Now()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", raw.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			first := "GET /one HTTP/1.1\r\n\r\n"
			if _, err := io.WriteString(c, tc.prefix+first); err != nil {
				t.Fatal(err)
			}
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			sc.SetDeadline(time.Now().Add(5 * time.Second))
			rt, ok := sc.(socket.Reader)
			if !ok {
				t.Fatalf("%T is not a socket.Reader", sc)
			}
			if rt.ReadTCP() != nil {
				t.Fatal("ReadTCP gave the socket before anything was read")
			}
			got := make([]byte, len(first))
			if _, err := io.ReadFull(sc, got); err != nil || string(got) != first {
				t.Fatalf("first read: %q, %v", got, err)
			}
			if rt.ReadTCP() != nil {
				t.Fatal("ReadTCP gave the socket before Read found the read-ahead empty")
			}
			if _, err := io.WriteString(c, "GET /two"); err != nil {
				t.Fatal(err)
			}
			got = make([]byte, 4)
			if _, err := io.ReadFull(sc, got); err != nil || string(got) != "GET " {
				t.Fatalf("second read: %q, %v", got, err)
			}
			tcp := rt.ReadTCP()
			if tcp == nil {
				t.Fatal("ReadTCP gave no socket once the read-ahead was drained")
			}
			got = make([]byte, 4)
			if _, err := io.ReadFull(tcp, got); err != nil || string(got) != "/two" {
				t.Fatalf("read from the socket: %q, %v", got, err)
			}
		})
	}
}

// TestHandoverKeepsReadDeadline: the preamble, read on the first Read,
// leaves the deadline the server set before it (the front's idle
// deadline): a client that sends one request and then nothing is still
// let go when it runs out.
func TestHandoverKeepsReadDeadline(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ln := AcceptHandovers(raw, &Verifier{Key: []byte("k"), Dispatcher: func() string { return "d1" }}, nil)
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := "GET /one HTTP/1.1\r\n\r\n"
	if _, err := io.WriteString(c, first); err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	got := make([]byte, len(first))
	if _, err := io.ReadFull(sc, got); err != nil || string(got) != first {
		t.Fatalf("first read: %q, %v", got, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sc.Read(make([]byte, 8))
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read past the server's deadline: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's read deadline was lost: an idle client is held for ever")
	}
}
