package filehttp

import (
	"errors"
	"net"
	"strconv"

	"github.com/mure-dev/mure/internal/api"
)

// refuse answers h with the 503 net/http's admission gives (api.Unavailable:
// the JSON envelope, Retry-After), in one write. Past capacity the front
// refuses thousands of reads a second; handing each to net/http cost a
// whole net/http request and kept its connection there for good (decision
// 0044).
func (f *Front) refuse(c net.Conn, h frontHead, refusal error) error {
	secs := 1
	var ra interface{ RetryAfterSeconds() int }
	if errors.As(refusal, &ra) {
		secs = ra.RetryAfterSeconds()
	}
	body := api.ErrorBody(api.CodeOverloaded, refusal.Error())
	buf := frontBufs.Get().(*[]byte)
	defer frontBufs.Put(buf)
	b := append((*buf)[:0], "HTTP/1.1 503 Service Unavailable\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nContent-Type: application/json\r\nDate: "...)
	b = appendDate(b)
	b = append(b, "\r\nRetry-After: "...)
	b = strconv.AppendInt(b, int64(secs), 10)
	b = append(b, "\r\nX-Content-Type-Options: nosniff"...)
	if h.close {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	if h.get {
		b = append(b, body...)
	}
	*buf = b
	_, err := c.Write(b)
	return err
}
