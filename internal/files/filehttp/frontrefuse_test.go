package filehttp

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/admission"
)

// TestFrontRefuses: with admission full (no slot, no waiting place), the
// front answers a plain read with the same 503 net/http's admission gives
// the same read, counts it as admission does, and keeps the connection:
// the next plain read on it is judged by the front again.
func TestFrontRefuses(t *testing.T) {
	reg := prometheus.NewRegistry()
	lim := admission.New(admission.Config{MaxInFlight: 1, MaxQueue: -1}, reg)
	f, addr, _ := startHandOverFront(t, FrontOptions{Slots: lim}, lim.Wrap(http.HandlerFunc(echo)))
	if lim.Acquire(context.Background()) != nil { // the one slot, held by a read in flight
		t.Fatal("no free slot")
	}

	c := dialFront(t, addr, 10*time.Second)
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func(req string) (head http.Header, status int, body string) {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
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
		return resp.Header, resp.StatusCode, string(b)
	}
	plain := "GET /files/a HTTP/1.1\r\nHost: h\r\n\r\n"
	var first string
	for i := 1; i <= 2; i++ {
		h, status, body := ask(plain)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"overloaded"`) {
			t.Fatalf("refused read %d: %d %q", i, status, body)
		}
		if got := f.Refused(); got != uint64(i) {
			t.Fatalf("after refused read %d the front refused %d (the connection left the front?)", i, got)
		}
		if f.OpenConnections() != 1 {
			t.Fatalf("after refused read %d the front holds %d connections, want 1", i, f.OpenConnections())
		}
		first = formatHead(h) + body
	}
	// An unknown header sends the same read to net/http, whose admission
	// refuses it: the answers must match.
	h, status, body := ask("GET /files/a HTTP/1.1\r\nHost: h\r\nX-Other: 1\r\n\r\n")
	if status != http.StatusServiceUnavailable {
		t.Fatalf("net/http's refusal: %d %q", status, body)
	}
	if got := formatHead(h) + body; got != first {
		t.Fatalf("the front's refusal differs from net/http's:\nfront:    %q\nnet/http: %q", first, got)
	}
	if f.Refused() != 2 {
		t.Fatalf("the front refused %d, want 2 (the third read was net/http's)", f.Refused())
	}
	if got := rejected(t, reg); got != 3 {
		t.Fatalf("admission counted %v refusals, want 3 (two by the front, one by net/http)", got)
	}
}

// formatHead writes h's fields sorted, one a line.
func formatHead(h http.Header) string {
	var b strings.Builder
	_ = h.WriteSubset(&b, nil)
	return b.String()
}

// rejected is mure_admission_rejected_total{reason="queue_full"} in reg.
func rejected(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mure_admission_rejected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "queue_full" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestFrontWaitsForSlot: with every slot taken but room to wait, the front
// keeps the connection and waits in admission's waiting room itself, then
// goes on with the read once a slot is free (here: to net/http, the copy
// being "held elsewhere").
func TestFrontWaitsForSlot(t *testing.T) {
	lim := admission.New(admission.Config{MaxInFlight: 1, MaxQueue: 1, QueueTimeout: time.Minute}, nil)
	f, addr, _ := startHandOverFront(t, FrontOptions{Slots: lim}, http.HandlerFunc(echo))
	if lim.Acquire(context.Background()) != nil {
		t.Fatal("no free slot")
	}
	c := dialFront(t, addr, 10*time.Second)
	defer c.Close()
	if _, err := io.WriteString(c, "GET /files/a HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, queued := lim.Stats(); queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the read never waited for a slot")
		}
	}
	if n := f.OpenConnections(); n != 1 {
		t.Fatalf("the front holds %d connections while the read waits, want 1 (handed over?)", n)
	}
	lim.Release()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "GET /files/a " {
		t.Fatalf("the read after its wait: %d %q", resp.StatusCode, b)
	}
}
