package systest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestFrontRefusesAndKeeps: a node past its admission limit (one slot, no
// waiting room, the slot held by a write whose body is slow to come)
// refuses a plain read in the front with the 503 net/http gives the same
// read, and keeps the connection in the front: once the slot is free, the
// next read on that connection is answered by the front (decision 0044).
func TestFrontRefusesAndKeeps(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(_ int, cfg *node.Config) {
		cfg.MaxInFlight, cfg.MaxQueue = 1, -1
	}})
	put(t, c.Client(0), "refuse/a", "hello")
	addr := c.HTTPAddr(0)

	// Hold the one slot: a write that has sent half its body.
	w, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(w, withToken("PUT /files/refuse/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello", addr)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the write to hold the slot", func() bool {
		return scrapeMetric(t, addr, "mure_admission_in_flight") == 1
	})

	r, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(r)
	ask := func(req string) (int, string) {
		t.Helper()
		if _, err := io.WriteString(r, withToken(req, addr)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Header.Del("Date")
		var head strings.Builder
		resp.Header.WriteSubset(&head, nil)
		return resp.StatusCode, head.String() + string(b)
	}
	status, front := ask("GET /files/refuse/a HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != http.StatusServiceUnavailable || !strings.Contains(front, `"code":"overloaded"`) || !strings.Contains(front, "Retry-After: 1") {
		t.Fatalf("a read past capacity: %d %q", status, front)
	}
	if st := apiStatus(t, c); st.FrontRefused != 1 {
		t.Fatalf("front_refused %d, want 1", st.FrontRefused)
	}
	// The same read with a header the front leaves to net/http: the same answer.
	if status, slow := frontGetOn(t, addr, "GET /files/refuse/a HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n\r\n"); status != http.StatusServiceUnavailable || slow != front {
		t.Fatalf("net/http's refusal differs from the front's:\nfront:    %q\nnet/http: %d %q", front, status, slow)
	}

	// Free the slot; the refused connection's next read is the front's.
	if _, err := io.WriteString(w, "world"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(w), nil); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("the slow write: %v %v", resp, err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the write to free the slot", func() bool {
		return scrapeMetric(t, addr, "mure_admission_in_flight") == 0
	})
	before := frontServed(t, c, 0)
	if status, body := ask("GET /files/refuse/a HTTP/1.1\r\nHost: x\r\n\r\n"); status != http.StatusOK || !strings.HasSuffix(body, "hello") {
		t.Fatalf("the next read on the refused connection: %d %q", status, body)
	}
	expectServed(t, c, 0, before+1, "the next read on the refused connection")
}

// frontGetOn sends req on a new connection: the answer's status and its
// head (without Date) and body.
func frontGetOn(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	r := frontGet(t, addr, req)
	r.Header.Del("Date")
	var head strings.Builder
	r.Header.WriteSubset(&head, nil)
	return r.StatusCode, head.String() + string(r.body)
}

func apiStatus(t *testing.T, c *testcluster.Cluster) node.APIStatus {
	t.Helper()
	var st node.APIStatus
	if ok, err := c.Nodes[0].Status().Service("api", &st); !ok || err != nil {
		t.Fatalf("api status: %v %v", ok, err)
	}
	return st
}
