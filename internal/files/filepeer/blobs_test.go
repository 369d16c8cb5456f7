package filepeer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/store"
)

// storeSource serves blobs from a real store, as the file service does.
type storeSource struct{ st *store.Store }

func (s storeSource) OpenBlob(path, id string) (*store.Blob, error) { return s.st.Open(path, id) }
func (s storeSource) BlobSent(path, id string, n int64, err error)  {}

// A batch fetch brings several blobs in one request and skips a blob the
// node does not have; from a node without the batch route (an older
// version) the same blobs come one request each; an answer cut short is
// an error, after the blobs it carried whole.
func TestFetchBlobsInOneRequest(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	contents := map[string]string{"a": "first", "b": strings.Repeat("b", 70<<10), "c": ""}
	var refs []files.BlobRef
	for _, p := range []string{"a", "missing", "b", "c"} {
		ref := files.BlobRef{Path: p, ID: "id-" + p}
		if c, ok := contents[p]; ok {
			w, err := st.Create(p, ref.ID)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(c))
			info, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			ref.Sum, ref.Size = info.Sum, info.Size
		}
		refs = append(refs, ref)
	}
	for _, tc := range []struct {
		name      string
		batch     bool // the node serves the batch route
		cut       int  // the batch answer ends after this many bytes (0: whole)
		wantCalls int64
		want      []int // indices each is called with
		wantErr   bool
	}{
		{"batch route", true, 0, 1, []int{0, 2, 3}, false},
		{"older node", false, 0, 5, []int{0, 2, 3}, false}, // the batch refused, then 4 GETs
		{"answer cut short", true, 8 + 5 + 8 + 100, 1, []int{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			mux := http.NewServeMux()
			mux.HandleFunc("GET /peer/files/blob", func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				b, err := st.Open(r.URL.Query().Get("path"), r.URL.Query().Get("id"))
				if err != nil {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				defer b.Close()
				io.Copy(w, b)
			})
			mux.HandleFunc("POST /peer/files/blobs", func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if !tc.batch {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				if tc.cut > 0 {
					rec := httptest.NewRecorder()
					serveBlobs(rec, r, storeSource{st})
					w.Write(rec.Body.Bytes()[:tc.cut])
					return
				}
				serveBlobs(w, r, storeSource{st})
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			tr := New(func() *http.Client { return srv.Client() })
			var got []int
			err := tr.FetchBlobs(context.Background(), strings.TrimPrefix(srv.URL, "http://"), refs, func(i int, body io.Reader) error {
				b, err := io.ReadAll(body)
				if err != nil {
					return err
				}
				if string(b) == contents[refs[i].Path] {
					got = append(got, i) // else not stored, as a blob failing its check
				}
				return nil
			})
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) || calls.Load() != tc.wantCalls {
				t.Fatalf("got blobs %v, %d requests, err %v; want %v, %d requests, error %v", got, calls.Load(), err, tc.want, tc.wantCalls, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err %v, want an unexpected end", err)
			}
		})
	}
}

// A batch fetch of no blob, or of more than files.MaxFetchBatch, is
// refused with a clear error.
func TestBatchFetchBounds(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"none", `[]`, "1 to 64 blobs, not 0"},
		{"too many", "[" + strings.TrimSuffix(strings.Repeat(`{"path":"p","id":"i"},`, files.MaxFetchBatch+1), ",") + "]", "not 65"},
		{"not JSON", `{`, "a JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			serveBlobs(rec, httptest.NewRequest(http.MethodPost, "/peer/files/blobs", strings.NewReader(tc.body)), storeSource{})
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("status %d %s, want 400 saying %q", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

// A frame whose size is not the blob's asked (a broken or hostile peer
// announcing more) ends the answer at its header: its bytes are not read,
// so what a fetch reads stays bounded by the sizes asked for.
func TestFramesOfAnotherSize(t *testing.T) {
	blobs := []files.BlobRef{{Path: "a", Size: 3}, {Path: "b", Size: 3}}
	var answer []byte
	answer = binary.BigEndian.AppendUint64(answer, 3)
	answer = append(answer, "abc"...)
	answer = binary.BigEndian.AppendUint64(answer, 1<<62)
	r := io.MultiReader(bytes.NewReader(answer), neverEnding{})
	var got []int
	err := readFrames(r, blobs, func(i int, body io.Reader) error {
		got = append(got, i)
		_, err := io.Copy(io.Discard, body)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "blob 2 of 2") || !slices.Equal(got, []int{0}) {
		t.Fatalf("got blobs %v, err %v; want blob 0, then an error at blob 2's frame", got, err)
	}
}

// neverEnding reads as endless zeros.
type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) { clear(p); return len(p), nil }
