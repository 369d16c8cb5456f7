package filepeer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestForwardedWriteRefusedBeforeBody: a large forwarded write that the
// holder refuses at once is not uploaded (it waited for 100 Continue);
// one the holder takes is.
func TestForwardedWriteRefusedBeforeBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("path") == "refused" {
			writeError(w, files.NewError(files.ErrPrecondition, "refused before the body"))
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Mure-Created", "1")
		w.Write([]byte(`{"path":"taken","size":` + itoa(n) + `}`))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}} // as the peer port's
	tr := New(func() *http.Client { return hc })
	peer := strings.TrimPrefix(srv.URL, "http://")
	const size = 4 << 20
	for _, tc := range []struct {
		path     string
		wantErr  error
		wantRead int
	}{{"refused", files.ErrPrecondition, 0}, {"taken", nil, size}} {
		t.Run(tc.path, func(t *testing.T) {
			body := &countingReader{r: strings.NewReader(strings.Repeat("x", size))}
			info, err := tr.Put(context.Background(), peer, tc.path, body, files.PutOptions{Size: size})
			if !errors.Is(err, tc.wantErr) || err == nil && (info.Size != size || !info.Created) {
				t.Fatalf("got %+v, %v; want error %v", info, err, tc.wantErr)
			}
			if body.n != tc.wantRead {
				t.Fatalf("%d bytes of the body read, want %d", body.n, tc.wantRead)
			}
		})
	}
}

func itoa(n int64) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// TestInvalidationsInOneRequest: several invalidations go to a node in
// one request; to a node without the batch route (an older version) they
// go one by one; one alone takes the route it always took.
func TestInvalidationsInOneRequest(t *testing.T) {
	invs := []files.Invalidation{{Path: "a", Index: 3}, {Path: "b", Index: 4, Hint: "n1"}, {Path: "a", Index: 5}}
	for _, tc := range []struct {
		name     string
		batch    bool // the node serves /peer/files/invalidations
		invs     []files.Invalidation
		requests []string
	}{
		{"batch", true, invs, []string{"/peer/files/invalidations"}},
		{"older node", false, invs, []string{"/peer/files/invalidations", "/peer/files/invalidate", "/peer/files/invalidate", "/peer/files/invalidate"}},
		{"one", true, invs[:1], []string{"/peer/files/invalidate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests []string
			var got []files.Invalidation
			mux := http.NewServeMux()
			mux.HandleFunc("POST /peer/files/invalidate", func(w http.ResponseWriter, r *http.Request) {
				requests = append(requests, r.URL.Path)
				var inv files.Invalidation
				if err := json.NewDecoder(r.Body).Decode(&inv); err != nil {
					t.Error(err)
				}
				got = append(got, inv)
				w.WriteHeader(http.StatusNoContent)
			})
			if tc.batch {
				mux.HandleFunc("POST /peer/files/invalidations", func(w http.ResponseWriter, r *http.Request) {
					requests = append(requests, r.URL.Path)
					var invs []files.Invalidation
					if err := json.NewDecoder(r.Body).Decode(&invs); err != nil {
						t.Error(err)
					}
					got = append(got, invs...)
					w.WriteHeader(http.StatusNoContent)
				})
			} else {
				mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
					requests = append(requests, r.URL.Path)
					http.NotFound(w, r)
				})
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			tr := New(func() *http.Client { return srv.Client() })
			if err := tr.Invalidate(context.Background(), strings.TrimPrefix(srv.URL, "http://"), tc.invs); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(requests, tc.requests) {
				t.Errorf("requests %v, want %v", requests, tc.requests)
			}
			if !slices.Equal(got, tc.invs) {
				t.Errorf("node recorded %v, want %v", got, tc.invs)
			}
		})
	}
}
