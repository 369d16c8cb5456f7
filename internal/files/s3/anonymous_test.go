package s3

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// noFiles is a file API that holds nothing: every call answers not found,
// so a request that passes the rights check ends in NoSuchKey or
// NoSuchBucket, and one that does not in AccessDenied.
type noFiles struct{}

func (noFiles) Put(context.Context, string, io.Reader, files.PutOptions) (files.Info, error) {
	return files.Info{}, files.ErrNotFound
}
func (noFiles) Open(context.Context, string, files.OpenOptions) (*files.Reader, error) {
	return nil, files.ErrNotFound
}
func (noFiles) Stat(context.Context, string, files.OpenOptions) (files.Info, error) {
	return files.Info{}, files.ErrNotFound
}
func (noFiles) Delete(context.Context, string, files.DeleteOptions) error { return files.ErrNotFound }
func (noFiles) List(context.Context, files.ListOptions) (files.ListPage, error) {
	return files.ListPage{}, nil
}
func (noFiles) Copy(context.Context, string, string, files.CopyOptions) (files.Info, error) {
	return files.Info{}, files.ErrNotFound
}

// TestUnsignedRequests: a request without a signature acts with the
// anonymous grants only: refused (AccessDenied) everywhere without them,
// let through to reads of a public prefix with ro:public/.
func TestUnsignedRequests(t *testing.T) {
	public := []auth.Grant{{Prefix: "public/"}}
	for _, c := range []struct {
		name         string
		anonymous    []auth.Grant
		method, path string
		copyFrom     string // X-Amz-Copy-Source
		want         string // the S3 code; for HEAD (no body), the status
	}{
		{"get, no anonymous grant", nil, http.MethodGet, "/public/k", "", CodeAccessDenied},
		{"head, no anonymous grant", nil, http.MethodHead, "/public/k", "", "403"},
		{"put, no anonymous grant", nil, http.MethodPut, "/public/k", "", CodeAccessDenied},
		{"delete, no anonymous grant", nil, http.MethodDelete, "/public/k", "", CodeAccessDenied},
		{"list objects, no anonymous grant", nil, http.MethodGet, "/public", "", CodeAccessDenied},
		{"create bucket, no anonymous grant", nil, http.MethodPut, "/public", "", CodeAccessDenied},
		{"list buckets", public, http.MethodGet, "/", "", CodeAccessDenied},
		{"get of a public key", public, http.MethodGet, "/public/k", "", CodeNoSuchBucket},
		{"list of a public bucket", public, http.MethodGet, "/public", "", CodeNoSuchBucket},
		{"get outside the public prefix", public, http.MethodGet, "/private/k", "", CodeAccessDenied},
		{"put under the public prefix", public, http.MethodPut, "/public/k", "", CodeAccessDenied},
		{"copy from outside a writable public prefix", []auth.Grant{{Prefix: "public/", Write: true}}, http.MethodPut, "/public/k", "/private/k", CodeAccessDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHandler(noFiles{}, testKeys{}, c.anonymous, nil)
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(""))
			if c.copyFrom != "" {
				r.Header.Set("X-Amz-Copy-Source", c.copyFrom)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Body.String()
			if c.method == http.MethodHead {
				got = strconv.Itoa(w.Code)
			}
			if !strings.Contains(got, c.want) {
				t.Fatalf("%d %s, want %s", w.Code, got, c.want)
			}
		})
	}
}
