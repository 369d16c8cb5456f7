package filehttp

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
)

// TestErrorStatuses: each error of the file API becomes the status, code
// and message the native API has always answered (docs/api.md).
func TestErrorStatuses(t *testing.T) {
	h := &Handler{maxHops: DefaultMaxHops}
	for _, tc := range []struct {
		name   string
		err    error
		hop    int
		status int
		code   string
		retry  string
	}{
		{"bad path", files.ValidatePath("a//b"), 0, http.StatusBadRequest, api.CodeBadPath, ""},
		{"bad request", files.NewError(files.ErrBadRequest, "x"), 0, http.StatusBadRequest, api.CodeBadRequest, ""},
		{"truncated", files.NewError(files.ErrTruncated, "x"), 0, http.StatusBadRequest, api.CodeTruncated, ""},
		{"not found", files.NewError(files.ErrNotFound, "x"), 0, http.StatusNotFound, api.CodeNotFound, ""},
		{"precondition", files.NewError(files.ErrPrecondition, "x"), 0, http.StatusPreconditionFailed, api.CodePrecondition, ""},
		{"conflict", files.NewError(files.ErrConflict, "x"), 0, http.StatusConflict, api.CodeConflict, ""},
		{"too large", &files.TooLargeError{Size: -1, Limit: 5}, 0, http.StatusRequestEntityTooLarge, api.CodeTooLarge, ""},
		{"no space", files.NewError(files.ErrNoSpace, "x"), 0, http.StatusInsufficientStorage, api.CodeNoSpace, ""},
		{"internal", errors.New("boom"), 0, http.StatusInternalServerError, api.CodeInternal, ""},
		{"no quorum", &files.UnavailableError{Kind: files.ErrNoQuorum, Msg: "x", RetryAfter: time.Second}, 0, http.StatusServiceUnavailable, api.CodeNoQuorum, "1"},
		{"pending", &files.UnavailableError{Kind: files.ErrPending, Msg: "x", RetryAfter: 1500 * time.Millisecond}, 0, http.StatusServiceUnavailable, api.CodeUnavailable, "2"},
		{"held, unknown address", &files.HeldElsewhereError{Path: "a", Node: "n2"}, 0, http.StatusServiceUnavailable, api.CodeUnavailable, "1"},
		{"held, too many hops", &files.HeldElsewhereError{Path: "a", Node: "n2", Addr: "h:1"}, DefaultMaxHops, http.StatusLoopDetected, api.CodeRedirectLoop, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.fail(w, httptest.NewRequest(http.MethodGet, "/files/a", nil), tc.hop, tc.err)
			var body struct{ Error, Code string }
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if w.Code != tc.status || body.Code != tc.code || body.Error == "" || w.Header().Get("Retry-After") != tc.retry {
				t.Fatalf("%d %q %q (Retry-After %q), want %d %q (Retry-After %q)", w.Code, body.Code, body.Error, w.Header().Get("Retry-After"), tc.status, tc.code, tc.retry)
			}
		})
	}
}
