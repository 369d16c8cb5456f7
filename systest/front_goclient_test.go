package systest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/testcluster"
)

// TestGoClientReadsViaFront: a Go net/http client's plain GET (its
// User-Agent, Accept-Encoding: gzip, keep-alive) is answered by the front,
// as curl's and wrk's are; and the mure Go client, after writing, still
// reads through the front: its plain reads have connections of their own,
// since a connection that carried a write stays with net/http (decision
// 0070). `mure bench replicated-io`'s reads had all gone to net/http for
// that reason.
func TestGoClientReadsViaFront(t *testing.T) {
	c := testcluster.Start(t, 1)
	url := "http://" + c.HTTPAddr(0) + "/files/g/a"
	getN := func(t *testing.T, get func() (io.ReadCloser, error)) {
		t.Helper()
		for range 3 {
			r, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(r); string(b) != "hello" {
				t.Fatalf("read %q", b)
			}
			r.Close()
		}
	}
	mc := c.Client(0)
	put(t, mc, "g/a", "hello")
	served := frontServed(t, c, 0)
	t.Run("net/http", func(t *testing.T) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		defer hc.CloseIdleConnections()
		getN(t, func() (io.ReadCloser, error) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+c.Token())
			resp, err := hc.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			return resp.Body, err
		})
		served += 3
		expectServed(t, c, 0, served, "the front to answer net/http's plain GETs")
	})
	t.Run("mure client after a write", func(t *testing.T) {
		for i := range 2 { // the writes' connections are net/http's from then on
			put(t, mc, "g/w", strings.Repeat("w", i+1))
		}
		getN(t, func() (io.ReadCloser, error) { return mc.Get(ctxT(t), "g/a", nil) })
		served += 3
		expectServed(t, c, 0, served, "the front to answer the mure client's reads after its writes")
	})
}
