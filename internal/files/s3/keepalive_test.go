package s3

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// A long CompleteMultipartUpload answers 200 at once and writes spaces
// until its result, or an error document, follows.
func TestCompleteKeepAlive(t *testing.T) {
	for _, fail := range []bool{false, true} {
		rec := httptest.NewRecorder()
		w := &spaceCounter{ResponseWriter: rec, spaces: make(chan struct{}, 100)}
		k := startKeepAlive(w, 5*time.Millisecond)
		for range 3 {
			select {
			case <-w.spaces:
			case <-time.After(5 * time.Second):
				t.Fatal("no space written in 5 s")
			}
		}
		k.stop()
		q := &request{w: rec, r: httptest.NewRequest(http.MethodPost, "/b/k?uploadId=x", nil), id: "ID"}
		if fail {
			writeErrorBody(q, files.NewError(files.ErrTruncated, "a part ended early"))
		} else {
			_ = xml.NewEncoder(rec).Encode(completeResult{Key: "k", ETag: `"x-2"`})
		}
		body := rec.Body.String()
		if rec.Code != 200 || !strings.HasPrefix(body, xml.Header+"   ") {
			t.Fatalf("status %d body %q: want 200, the XML declaration, then spaces", rec.Code, body)
		}
		var e struct {
			XMLName xml.Name
			Code    string
		}
		if err := xml.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("body %q is not one XML document: %v", body, err)
		}
		want := "CompleteMultipartUploadResult"
		if fail {
			want = "Error"
		}
		if e.XMLName.Local != want || fail && e.Code != CodeIncompleteBody {
			t.Fatalf("document %s code %q, want %s", e.XMLName.Local, e.Code, want)
		}
	}
}

// spaceCounter signals each space written to the answer.
type spaceCounter struct {
	http.ResponseWriter
	spaces chan struct{}
}

func (s *spaceCounter) Write(p []byte) (int, error) {
	if string(p) == " " {
		defer func() { s.spaces <- struct{}{} }()
	}
	return s.ResponseWriter.Write(p)
}

func (s *spaceCounter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
