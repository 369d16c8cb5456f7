package filepeer

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// TestErrorsCrossTheWire: every kind of file API error written by a node
// is rebuilt by its peer as an error that matches the same sentinels and
// types, with the same message; a non-2xx answer without the marker (an
// older node's unknown route) is a plain transport error.
func TestErrorsCrossTheWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		is   []error
	}{
		{"not found", files.NewError(files.ErrNotFound, "no file at a"), []error{files.ErrNotFound}},
		{"precondition", files.NewError(files.ErrPrecondition, "a is not at version \"3\""), []error{files.ErrPrecondition}},
		{"conflict", files.NewError(files.ErrConflict, "another write took over"), []error{files.ErrConflict}},
		{"bad path", files.NewError(files.ErrBadPath, "empty path"), []error{files.ErrBadPath}},
		{"held elsewhere", &files.HeldElsewhereError{Path: "a", Node: "n2", Addr: "h:1"}, []error{files.ErrHeldElsewhere}},
		{"too large", &files.TooLargeError{Size: 10, Limit: 5}, []error{files.ErrTooLarge}},
		{"no quorum", &files.UnavailableError{Kind: files.ErrNoQuorum, Msg: "no leader", RetryAfter: 2 * time.Second},
			[]error{files.ErrNoQuorum, files.ErrUnavailable}},
		{"interrupted", &files.UnavailableError{Kind: files.ErrInterrupted, Msg: "lost", RetryAfter: time.Second},
			[]error{files.ErrInterrupted, files.ErrUnavailable}},
		{"internal", files.NewError(files.ErrInternal, "disk on fire"), []error{files.ErrInternal}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeError(rec, tc.err)
			got := readError(rec.Result(), "test")
			for _, want := range tc.is {
				if !errors.Is(got, want) {
					t.Errorf("rebuilt %v does not match %v", got, want)
				}
			}
			if got.Error() != tc.err.Error() {
				t.Errorf("message %q, want %q", got, tc.err)
			}
			var held *files.HeldElsewhereError
			if errors.As(tc.err, &held) {
				var g *files.HeldElsewhereError
				if !errors.As(got, &g) || *g != *held {
					t.Errorf("rebuilt %#v, want %#v", got, held)
				}
			}
			var un *files.UnavailableError
			if errors.As(tc.err, &un) {
				var g *files.UnavailableError
				if !errors.As(got, &g) || g.RetryAfter != un.RetryAfter {
					t.Errorf("rebuilt %#v, want retry after %v", got, un.RetryAfter)
				}
			}
		})
	}
	rec := httptest.NewRecorder()
	http.Error(rec, "no such route", http.StatusNotFound)
	if err := readError(rec.Result(), "test"); errors.Is(err, files.ErrNotFound) || err == nil {
		t.Fatalf("an unmarked 404 became %v, want a transport error", err)
	}
}
