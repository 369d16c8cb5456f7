package s3

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Admission bounds the requests a node serves at once: the node passes its
// client API's limiters (internal/admission), so that S3 requests take the
// same slots as the native API's, on the client port and on --s3 alike.
type Admission interface {
	// Acquire takes a slot, waiting a bounded time; an error is a refusal
	// (the node is at capacity) or, with ctx done, the caller gone.
	Acquire(ctx context.Context) error
	// Release gives the slot back.
	Release()
}

// admit takes the slots q's request needs — one of the client API's and,
// for a write, one of its writes' too, as the native API's writes take —
// and returns the function that gives them back. When it reports false
// the request was refused with 503 SlowDown (S3 clients retry it), or its
// caller is gone.
func (h *Handler) admit(q *request) (release func(), ok bool) {
	lims := []Admission{h.admission}
	if m := q.r.Method; m == http.MethodPut || m == http.MethodPost || m == http.MethodDelete {
		lims = append(lims, h.writeAdmission)
	}
	var held []Admission
	release = func() {
		for _, l := range held {
			l.Release()
		}
	}
	for _, l := range lims {
		if l == nil {
			continue
		}
		if err := l.Acquire(q.r.Context()); err != nil {
			release()
			if q.r.Context().Err() == nil {
				q.fail(overloaded(err))
			}
			return nil, false
		}
		held = append(held, l)
	}
	return release, true
}

// overloaded is S3's answer to a refusal: SlowDown, with the limiter's
// message and Retry-After.
func overloaded(err error) *Error {
	e := &Error{Code: CodeSlowDown, Status: http.StatusServiceUnavailable, Message: err.Error(), RetryAfter: 1}
	var ra interface{ RetryAfterSeconds() int }
	if errors.As(err, &ra) && ra.RetryAfterSeconds() > 0 {
		e.RetryAfter = ra.RetryAfterSeconds()
	}
	return e
}

// RefuseConn answers a connection that the --s3 port's connection limit
// turns away (the node wires it under its --max-conns): a complete 503
// SlowDown in S3's XML, with Retry-After, which S3 clients retry. No HTTP
// server owns c; the caller closes it.
func RefuseConn(c net.Conn, msg string) {
	var body bytes.Buffer
	body.WriteString(xml.Header)
	_ = xml.NewEncoder(&body).Encode(errorBody{Code: CodeSlowDown, Message: msg, RequestID: newRequestID()})
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nRetry-After: 1\r\nConnection: close\r\nServer: mure\r\nContent-Length: "+
		strconv.Itoa(body.Len())+"\r\n\r\n"+body.String())
}
