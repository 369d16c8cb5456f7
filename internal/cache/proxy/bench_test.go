package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkHit: one client, keep-alive, GET of a stored 10 KiB object
// (paper 003's mean object size) answered from the memory tier. A smoke
// figure; issue 22 measures the proxy properly.
func BenchmarkHit(b *testing.B) {
	o := newOrigin(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		io.WriteString(w, strings.Repeat("b", 10<<10))
	})
	p, _ := proxyFor(b, o, b.TempDir(), Limits{})
	client := &http.Client{}
	get := func() {
		resp, err := client.Get(p.URL + "/obj")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get()
	b.SetBytes(10 << 10)
	b.ResetTimer()
	for range b.N {
		get()
	}
	if o.hits.Load() != 1 {
		b.Fatalf("origin saw %d fetches", o.hits.Load())
	}
}
