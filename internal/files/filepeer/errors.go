package filepeer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// errorHeader marks an answer that carries a file API error, so that a
// refusal by the remote file service is told apart from any other non-2xx
// answer (a route an older node does not have, a proxy).
const errorHeader = "X-Mure-Files-Error"

// wireError is a file API error on the wire.
type wireError struct {
	Kind         string `json:"kind"`
	Message      string `json:"message"`
	Path         string `json:"path,omitempty"`
	Node         string `json:"node,omitempty"`
	Addr         string `json:"addr,omitempty"`
	Size         int64  `json:"size,omitempty"`
	Limit        int64  `json:"limit,omitempty"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
}

// kinds maps wire kinds to the API's errors, the more specific first.
// Retry marks the kinds of files.ErrUnavailable.
var kinds = []struct {
	name  string
	err   error
	retry bool
}{
	{"held_elsewhere", files.ErrHeldElsewhere, false},
	{"too_large", files.ErrTooLarge, false},
	{"no_quorum", files.ErrNoQuorum, true},
	{"pending", files.ErrPending, true},
	{"interrupted", files.ErrInterrupted, true},
	{"unavailable", files.ErrUnavailable, true},
	{"not_found", files.ErrNotFound, false},
	{"precondition", files.ErrPrecondition, false},
	{"conflict", files.ErrConflict, false},
	{"truncated", files.ErrTruncated, false},
	{"no_space", files.ErrNoSpace, false},
	{"bad_path", files.ErrBadPath, false},
	{"bad_request", files.ErrBadRequest, false},
	{"internal", files.ErrInternal, false},
}

// writeError answers err, a file API error, for the peer to rebuild.
func writeError(w http.ResponseWriter, err error) {
	we := wireError{Kind: "internal", Message: err.Error()}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			we.Kind = k.name
			break
		}
	}
	var held *files.HeldElsewhereError
	if errors.As(err, &held) {
		we.Path, we.Node, we.Addr = held.Path, held.Node, held.Addr
	}
	var large *files.TooLargeError
	if errors.As(err, &large) {
		we.Size, we.Limit = large.Size, large.Limit
	}
	var un *files.UnavailableError
	if errors.As(err, &un) {
		we.RetryAfterMS = un.RetryAfter.Milliseconds()
	}
	w.Header().Set(errorHeader, we.Kind)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict) // the status carries nothing: the kind does
	_ = json.NewEncoder(w).Encode(we)
}

// readError rebuilds the error of a non-2xx answer: the remote file
// service's typed error, or a plain error for anything else.
func readError(resp *http.Response, what string) error {
	if resp.Header.Get(errorHeader) == "" {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: status %d %s", what, resp.StatusCode, msg)
	}
	var we wireError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&we); err != nil {
		return fmt.Errorf("%s: unreadable error answer: %w", what, err)
	}
	switch we.Kind {
	case "held_elsewhere":
		return &files.HeldElsewhereError{Path: we.Path, Node: we.Node, Addr: we.Addr}
	case "too_large":
		return &files.TooLargeError{Size: we.Size, Limit: we.Limit}
	}
	for _, k := range kinds {
		if k.name != we.Kind {
			continue
		}
		if k.retry {
			return &files.UnavailableError{Kind: k.err, Msg: we.Message, RetryAfter: time.Duration(we.RetryAfterMS) * time.Millisecond}
		}
		return files.NewError(k.err, we.Message)
	}
	return files.NewError(files.ErrInternal, we.Message)
}
