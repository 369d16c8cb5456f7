package filepeer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
