package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/mure-dev/mure/client"
)

// Error kinds other than HTTP statuses ("http_503", ...).
const (
	KindTransport = "transport"     // connection refused, reset, EOF...
	KindTimeout   = "timeout"       // the per-request timeout expired
	KindCanceled  = "canceled"      // the run was interrupted (Ctrl-C)
	KindNoData    = "no_data"       // nothing to read: every write of the client failed
	KindLength    = "length"        // a read returned the wrong number of bytes
	KindEmpty     = "empty"         // conn-rate: a 200 answer without a body
	KindRedirect  = "redirect_loop" // conn-rate: redirected back to a visited URL, or too often
	KindContent   = "content"       // conn-rate: a body of the right length whose SHA-256 differs
)

// errNoData: a read has no file to read.
var errNoData = errors.New("no file to read: the writes failed")

// LengthError is the error of a read that did not return the expected size.
type LengthError struct {
	Path      string
	Got, Want int64
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("%s: read %d bytes, want %d", e.Path, e.Got, e.Want)
}

// ContentError is the error of a body whose digest is not the expected one.
type ContentError struct {
	Path, Got, Want string // hex digests
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("%s: body SHA-256 %s, want %s", e.Path, e.Got, e.Want)
}

// ErrorKind classifies the error of a request: "http_<status>" for an error
// answer of a node, or one of the Kind constants.
func ErrorKind(err error) string {
	var ae *client.APIError
	var le *LengthError
	var ce *ContentError
	switch {
	case errors.As(err, &ce):
		return KindContent
	case errors.As(err, &ae):
		return "http_" + strconv.Itoa(ae.Status)
	case errors.As(err, &le):
		return KindLength
	case errors.Is(err, errNoData):
		return KindNoData
	case errors.Is(err, errEmptyBody):
		return KindEmpty
	case errors.Is(err, errRedirectLoop):
		return KindRedirect
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCanceled
	}
	return KindTransport
}
