//go:build linux

package systest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// BenchmarkSessionResume measures resume latency: from dialling the
// attach WebSocket to holding the first full screen (80x24, filled), on
// a three-node process cluster on one machine, attaching through the
// session's own node and through another one (relayed over the peer
// port). Each op is a new connection, as a returning user's is. Run it
// with, e.g. (root: it creates a Unix account):
//
//	go test ./systest -run '^$' -bench SessionResume -benchtime 300x
//
// p50-ms and p99-ms are the latency's percentiles; docs/benchmarks.md,
// "Session resume", records figures.
func BenchmarkSessionResume(b *testing.B) {
	needSessions(b)
	pc := testcluster.StartProc(b, 3)
	b.Cleanup(func() { killHolders(pc, 3) })
	u := addSessionUser(b, pc.Client(0))
	ctx := context.Background()
	c0 := client.New([]string{pc.HTTPAddr(0)}, client.WithToken(u.token))
	s, err := c0.StartSession(ctx, client.NewSession{Cols: 80, Rows: 24})
	if err != nil {
		b.Fatal(err)
	}
	defer c0.KillSession(ctx, s.ID)
	// Fill the screen.
	conn, err := c0.AttachSession(ctx, s.ID, 80, 24)
	if err != nil {
		b.Fatal(err)
	}
	if err := conn.Write(ctx, []byte("seq -f 'line %g of a full screen' 1 200\r")); err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "line 200 of") {
		p, err := conn.Read(rctx)
		if err != nil {
			b.Fatal(err)
		}
		seen.Write(p)
	}
	cancel()
	conn.Close()
	for _, via := range []struct {
		name string
		node int
	}{{"same-node", 0}, {"other-node", 1}} {
		b.Run(via.name, func(b *testing.B) {
			c := client.New([]string{pc.HTTPAddr(via.node)}, client.WithToken(u.token))
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				conn, err := c.AttachSession(ctx, s.ID, 80, 24)
				if err != nil {
					b.Fatal(err)
				}
				p, err := conn.Read(ctx)
				lat = append(lat, time.Since(start))
				if err != nil || !strings.Contains(string(p), "line 200 of") {
					b.Fatalf("first message %q (%v): want the full screen", p, err)
				}
				conn.Close()
			}
			slices.Sort(lat)
			pct := func(q float64) float64 {
				return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
