package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Sentinel errors, matched with errors.Is.
var (
	ErrNotFound           = errors.New("mure: not found")
	ErrPreconditionFailed = errors.New("mure: precondition failed")
	ErrTooLarge           = errors.New("mure: too large")
	ErrUnavailable        = errors.New("mure: unavailable")
	ErrNotModified        = errors.New("mure: not modified")
	// ErrUnauthorized: no credential, or a wrong, expired or revoked one
	// (401).
	ErrUnauthorized = errors.New("mure: not authenticated")
	// ErrForbidden: the credential is good but its user may not do this
	// (403).
	ErrForbidden = errors.New("mure: forbidden")
	// ErrOutcomeUnknown: a write may or may not have been applied (the
	// request may have been sent, and no answer was received).
	ErrOutcomeUnknown = errors.New("mure: outcome unknown")
)

// APIError is an error answer of a node.
type APIError struct {
	Status  int    // HTTP status
	Code    string // machine code of docs/api.md, empty if the body was not JSON
	Message string
	Node    string // host:port of the node that answered
}

func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = strings.ToLower(http.StatusText(e.Status))
	}
	return fmt.Sprintf("node %s: %d %s: %s", e.Node, e.Status, code, e.Message)
}

// Is maps the error to the package's sentinels.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound || e.Code == "not_found"
	case ErrPreconditionFailed:
		return e.Status == http.StatusPreconditionFailed || e.Code == "precondition_failed"
	case ErrTooLarge:
		return e.Status == http.StatusRequestEntityTooLarge || e.Code == "too_large"
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable || e.Code == "unavailable" || e.Code == "no_quorum"
	case ErrNotModified:
		return e.Status == http.StatusNotModified
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	}
	return false
}

// readAPIError consumes and closes resp.Body.
func readAPIError(resp *http.Response) *APIError {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode, Node: resp.Request.URL.Host}
	var body struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if json.Unmarshal(data, &body) == nil && (body.Error != "" || body.Code != "") {
		e.Code, e.Message = body.Code, body.Error
		return e
	}
	e.Message = http.StatusText(resp.StatusCode)
	if s := strings.TrimSpace(string(data)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		e.Message += ": " + s
	}
	return e
}

func outcomeUnknown(err error) error {
	if errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}
