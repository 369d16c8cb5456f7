package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Error codes of the client API (docs/api.md).
const (
	CodeBadPath      = "bad_path"
	CodeNotFound     = "not_found"
	CodePrecondition = "precondition_failed"
	CodeTooLarge     = "too_large"
	CodeNoSpace      = "no_space"
	CodeNoQuorum     = "no_quorum"
	CodeUnavailable  = "unavailable"
	CodeRedirectLoop = "redirect_loop"
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: the caller is known, but its role does not allow
	// the request (403).
	CodeForbidden = "forbidden"
	// CodeTLSRequired: a password or access key sent over plain HTTP from
	// another machine (refused; use TLS).
	CodeTLSRequired = "tls_required"
	// CodeTooManyAttempts: too many failed logins from this address or
	// for this user (429 with Retry-After).
	CodeTooManyAttempts = "too_many_attempts"
	CodeMethod          = "method_not_allowed"
	CodeTruncated       = "truncated"
	CodeConflict        = "conflict"
	CodeInternal        = "internal"
	CodeRouteNotFound   = "no_such_route"
	// CodeBadGateway: an app behind the node (a CGI program or a proxied
	// app, internal/apps) failed or could not be reached.
	CodeBadGateway = "bad_gateway"
	// CodeGatewayTimeout: an app behind the node took too long and was
	// stopped or given up on.
	CodeGatewayTimeout = "gateway_timeout"
	// CodeOverloaded: admission turned the request away (503 with
	// Retry-After; internal/admission, and the faces that answer before
	// net/http does).
	CodeOverloaded = "overloaded"
)

// Error writes the JSON error envelope.
func Error(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(envelope{msg, code})
}

type envelope struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// ErrorBody is the body Error writes, for a face that writes its answers
// itself (filehttp.Front's refusals).
func ErrorBody(code, msg string) []byte {
	b, _ := json.Marshal(envelope{msg, code})
	return append(b, '\n')
}

// Unavailable answers 503 with a Retry-After of secs.
func Unavailable(w http.ResponseWriter, secs int, code, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	Error(w, http.StatusServiceUnavailable, code, msg)
}

// JSON writes v as a JSON answer with status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := encoders.Get().(*encoder)
	if e.enc.Encode(v) == nil {
		_, _ = w.Write(e.buf.Bytes())
	}
	e.buf.Reset()
	if e.buf.Cap() <= maxPooledAnswer {
		encoders.Put(e)
	}
}

// encoder is an indenting JSON encoder and the buffer it writes to,
// pooled: a new encoder per answer made its indentation buffer anew, a
// PUT's largest allocation after its body (issue 16).
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledAnswer: an encoder that wrote a larger answer (a listing) is
// left to the collector rather than kept with its buffers.
const maxPooledAnswer = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetIndent("", "  ")
	return e
}}

// NotFound is the handler for unknown routes.
func NotFound(w http.ResponseWriter, r *http.Request) {
	Error(w, http.StatusNotFound, CodeRouteNotFound, "no such route: "+r.Method+" "+r.URL.Path+" (see docs/api.md)")
}
