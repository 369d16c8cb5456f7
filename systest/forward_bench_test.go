package systest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mure-dev/mure/internal/testcluster"
)

// BenchmarkForwarding measures what forwarding costs against a local
// read and a redirect, on an in-process cluster of three nodes (loopback,
// one machine: the client and the nodes share the CPU). Node 0 writes the
// files and keeps their write right; reads and writes then go to
//
//	local    node 0 itself;
//	redirect the node with no copy, following its 307 to node 0;
//	forward  the node with no copy, with X-Mure-Forward: 1 (it streams the
//	         read from node 0, hands the write to node 0).
//
// Run it with, e.g.:
//
//	go test ./systest -run '^$' -bench Forwarding -benchtime 3s -cpu 8
//
// ns/op is the time per request at -cpu concurrent clients; MB/s the
// content rate (reads). docs/benchmarks.md, "Forwarding", records figures.
func BenchmarkForwarding(b *testing.B) {
	c := testcluster.Start(b, 3)
	ctx := context.Background()
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		b.Fatal(err)
	}
	sizes := []int{4 << 10, 64 << 10, 1 << 20}
	for _, size := range sizes {
		data := make([]byte, size)
		rand.Read(data)
		if _, err := c.Client(0).Put(ctx, fmt.Sprintf("bench/r%d", size), bytes.NewReader(data), nil); err != nil {
			b.Fatal(err)
		}
	}
	const writers = 64
	for i := range writers {
		if _, err := c.Client(0).Put(ctx, fmt.Sprintf("bench/w%d", i), strings.NewReader("seed"), nil); err != nil {
			b.Fatal(err)
		}
	}
	out := -1
	for i := range c.Nodes {
		f := c.Nodes[0].Cluster().FSM().File("bench/r4096")
		if !f.IsValidOn(c.Nodes[i].ID()) && f.Holder != c.Nodes[i].ID() {
			out = i
		}
	}
	for i := range writers {
		f := c.Nodes[0].Cluster().FSM().File(fmt.Sprintf("bench/w%d", i))
		if out < 0 || f.IsValidOn(c.Nodes[out].ID()) || f.Holder != c.Nodes[0].ID() {
			b.Fatalf("node %d holds a copy of bench/w%d (%+v): no node without a copy", out, i, f)
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: testcluster.Authorize(tr)} // follows 307s
	modes := []struct {
		name    string
		node    int
		forward bool
	}{{"local", 0, false}, {"redirect", out, false}, {"forward", out, true}}
	for _, size := range sizes {
		for _, m := range modes {
			b.Run(fmt.Sprintf("read/%s/%dK", m.name, size>>10), func(b *testing.B) {
				url := fmt.Sprintf("http://%s/files/bench/r%d", c.HTTPAddr(m.node), size)
				b.SetBytes(int64(size))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						benchDo(b, hc, http.MethodGet, url, m.forward, nil, int64(size))
					}
				})
			})
		}
	}
	body := make([]byte, 4<<10)
	for _, m := range modes {
		b.Run(fmt.Sprintf("write/%s/4K", m.name), func(b *testing.B) {
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				url := fmt.Sprintf("http://%s/files/bench/w%d", c.HTTPAddr(m.node), next.Add(1)%writers)
				for pb.Next() {
					benchDo(b, hc, http.MethodPut, url, m.forward, body, -1)
				}
			})
		})
	}
}

func benchDo(b *testing.B, hc *http.Client, method, url string, forward bool, body []byte, want int64) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if forward {
		req.Header.Set("X-Mure-Forward", "1")
	}
	resp, err := hc.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 || want >= 0 && n != want {
		b.Errorf("%s %s: %d, %d bytes", method, url, resp.StatusCode, n)
	}
}
