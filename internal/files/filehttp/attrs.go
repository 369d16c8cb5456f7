package filehttp

import (
	"mime"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/mure-dev/mure/internal/files"
)

// A file's attributes on the native face: a read answers the content
// type and the standard headers kept with the file (put over S3, WebDAV
// or a native PUT with Content-Type); a file without them is answered as
// application/octet-stream. The ETag stays the version's.

// defaultType is the Content-Type of a file that was given none.
const defaultType = "application/octet-stream"

// hasAttrs reports whether info changes the headers of a read: the
// reading paths do nothing more for a file without.
func hasAttrs(info *files.Info) bool {
	return info.ContentType != "" || len(info.Headers) > 0
}

// contentType is the Content-Type a read of info answers.
func contentType(info *files.Info) string {
	if info.ContentType != "" {
		return info.ContentType
	}
	return defaultType
}

// setAttrHeaders sets on hd the content type and standard headers of
// info. A file with a Content-Encoding is sent as stored, so a whole-file
// read gets its Content-Length (http.ServeContent leaves it out then).
func setAttrHeaders(hd http.Header, info *files.Info, r *http.Request, size int64) {
	hd["Content-Type"] = []string{contentType(info)}
	for k, v := range info.Headers {
		if v != "" {
			hd[k] = []string{v}
		}
	}
	if info.Headers["Content-Encoding"] != "" && plainRead(r) {
		hd["Content-Length"] = []string{strconv.FormatInt(size, 10)}
	}
}

// putType is the content type a native PUT keeps: the request's
// Content-Type, except none, the default (application/octet-stream, what
// an untyped file is answered with anyway) and
// application/x-www-form-urlencoded, which curl -d and HTML forms send
// whatever the body is. It is "" (keep none) for those, and for a
// Content-Type that is not a media type.
func putType(r *http.Request) (string, bool) {
	v := strings.TrimSpace(r.Header.Get("Content-Type"))
	if v == "" {
		return "", true
	}
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return "", false
	}
	if mt == defaultType || mt == "application/x-www-form-urlencoded" {
		return "", true
	}
	return v, true
}

// attrHead is plainHead for a file with attributes: its headers among the
// others in net/http's order (sorted by name) and written as net/http
// writes them (values trimmed).
func (f *Front) attrHead(info files.Info, size int64) (pre, post []byte) {
	header := func(b []byte, name, value string) []byte {
		if value == "" {
			return b
		}
		b = append(b, "\r\n"...)
		b = append(b, name...)
		b = append(b, ": "...)
		return append(b, textproto.TrimString(value)...)
	}
	pre = append(pre, "HTTP/1.1 200 OK\r\nAccept-Ranges: bytes"...)
	for _, name := range [...]string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language"} { // sorted before Content-Length
		pre = header(pre, name, info.Headers[name])
	}
	pre = append(pre, "\r\nContent-Length: "...)
	pre = strconv.AppendInt(pre, size, 10)
	pre = header(pre, "Content-Type", contentType(&info))
	pre = append(pre, "\r\nDate: "...)
	post = append(post, "\r\nEtag: "...)
	post = append(post, info.ETag...)
	post = header(post, "Expires", info.Headers["Expires"])
	return pre, f.appendTail(post, info)
}
