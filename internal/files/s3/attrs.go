package s3

import (
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/mure-dev/mure/internal/files"
)

// An object's metadata is the file's attributes (decision 0024): its
// Content-Type, the standard headers and the user metadata x-amz-meta-*
// (names lower case, as S3 keeps them).

// userMetaPrefix starts a user metadata header.
const userMetaPrefix = "X-Amz-Meta-"

// maxUserMeta is S3's limit on user metadata: names and values together.
const maxUserMeta = 2 << 10

// defaultContentType is what S3 answers for an object stored without one.
const defaultContentType = "binary/octet-stream"

// attrsOf reads an object's metadata from a PUT, a CopyObject with
// REPLACE or a CreateMultipartUpload.
func attrsOf(r *http.Request) (files.Attrs, error) {
	a := files.Attrs{ContentType: r.Header.Get("Content-Type")}
	size := 0
	for name, vs := range r.Header {
		switch {
		case strings.HasPrefix(name, userMetaPrefix):
			if a.User == nil {
				a.User = map[string]string{}
			}
			k, v := strings.ToLower(name[len(userMetaPrefix):]), strings.Join(vs, ",")
			a.User[k] = v
			size += len(k) + len(v)
		case files.IsStandardHeader(name):
			if a.Headers == nil {
				a.Headers = map[string]string{}
			}
			a.Headers[name] = vs[0]
		}
	}
	if size > maxUserMeta {
		return a, errorf(http.StatusBadRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size: %d bytes of x-amz-meta-* names and values, at most %d.", size, maxUserMeta)
	}
	if err := files.CheckAttrs(a); err != nil {
		return a, errorf(http.StatusBadRequest, CodeInvalidArgument, "%v", err)
	}
	return a, nil
}

// responseOverrides are the query parameters of a GET that replace a
// header of the answer (presigned downloads use them).
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

// setAttrHeaders answers an object's metadata in the headers of a GET or
// HEAD, with the request's response-* overrides.
func setAttrHeaders(q *request, info files.Info) {
	h := q.w.Header()
	ct := info.ContentType
	if ct == "" {
		ct = defaultContentType
	}
	h.Set("Content-Type", ct)
	for k, v := range info.Headers {
		h.Set(k, v)
	}
	for k, v := range info.User {
		// Names and values another face stored (WebDAV's properties) may
		// not fit in a header: those are not answered here.
		if httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v) {
			h["x-amz-meta-"+k] = []string{v} // lower case, as S3 answers
		}
	}
	qs := q.r.URL.Query()
	for p, name := range responseOverrides {
		if v := qs.Get(p); v != "" {
			h.Set(name, v)
		}
	}
}

// etagOf is an object's S3 ETag: the MD5 of its content (or, assembled by
// a multipart upload, S3's md5-of-md5s-N), quoted; the file's version for
// content stored before the store kept MD5s.
func etagOf(info files.Info) string {
	switch {
	case info.PartsETag != "":
		return info.PartsETag
	case info.MD5 != "":
		return `"` + info.MD5 + `"`
	default:
		return info.ETag
	}
}
