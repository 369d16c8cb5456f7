package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// condOf turns If-Match / If-None-Match on a write into the file API's
// condition. An S3 ETag (an MD5) names content, not a version: If-Match
// holds when the current object's ETag is the one given, and the write
// then requires that version, so a write in between still fails it.
func (h *Handler) condOf(q *request) (files.Cond, error) {
	var c files.Cond
	if q.r.Header.Get("If-None-Match") == "*" {
		c.IfNoneMatch = true
	}
	m := q.r.Header.Get("If-Match")
	if m == "" {
		return c, nil
	}
	info, err := h.files.Stat(q.r.Context(), q.path(), files.OpenOptions{Forwarding: q.forward})
	if err != nil {
		return c, err // NoSuchKey when there is no object: S3's answer
	}
	if !etagMatch(m, etagOf(info)) && !etagMatch(m, info.ETag) {
		return c, errorf(http.StatusPreconditionFailed, CodePreconditionFailed, "If-Match %s: the object's ETag is %s", m, etagOf(info))
	}
	c.IfMatch = info.Version
	return c, nil
}

func (h *Handler) putObject(q *request) {
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	attrs, err := attrsOf(q.r)
	if err != nil {
		q.fail(err)
		return
	}
	cond, err := h.condOf(q)
	if err != nil {
		q.fail(err)
		return
	}
	b, size, err := newBody(q.r, q.sig)
	if err != nil {
		q.fail(err)
		return
	}
	info, err := h.files.Put(q.r.Context(), q.path(), b, files.PutOptions{Forwarding: q.forward, Size: size, Cond: cond, Attrs: attrs})
	if b.failed != nil {
		q.fail(b.failed)
		return
	}
	if err != nil {
		q.fail(err)
		return
	}
	q.w.Header().Set("ETag", etagOf(info))
	q.w.WriteHeader(http.StatusOK)
}

// conditional answers the read conditions of r against info; it returns
// false when it answered.
func conditional(q *request, info files.Info) bool {
	r := q.r
	etag := etagOf(info)
	mod := info.Modified.Truncate(time.Second)
	if m := r.Header.Get("If-Match"); m != "" && !etagMatch(m, etag) {
		q.fail(errorf(http.StatusPreconditionFailed, CodePreconditionFailed, "If-Match %s: the object's ETag is %s", m, etag))
		return false
	}
	if s := r.Header.Get("If-Unmodified-Since"); s != "" && r.Header.Get("If-Match") == "" {
		if t, err := http.ParseTime(s); err == nil && mod.After(t) {
			q.fail(errorf(http.StatusPreconditionFailed, CodePreconditionFailed, "the object was modified at %s, after If-Unmodified-Since", mod.Format(http.TimeFormat)))
			return false
		}
	}
	notModified := false
	if m := r.Header.Get("If-None-Match"); m != "" {
		notModified = etagMatch(m, etag)
	} else if s := r.Header.Get("If-Modified-Since"); s != "" {
		if t, err := http.ParseTime(s); err == nil && !mod.After(t) {
			notModified = true
		}
	}
	if notModified {
		q.w.Header().Set("ETag", etag)
		q.w.Header().Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
		q.w.WriteHeader(http.StatusNotModified)
		return false
	}
	return true
}

func etagMatch(list, etag string) bool {
	for e := range strings.SplitSeq(list, ",") {
		e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
		if e == "*" || e == etag || strings.Trim(e, `"`) == strings.Trim(etag, `"`) {
			return true
		}
	}
	return false
}

func (h *Handler) getObject(q *request) {
	if err := q.allow(auth.Read, q.path()); err != nil {
		q.fail(err)
		return
	}
	opt := files.OpenOptions{Forwarding: q.forward}
	off, n, ranged := leadingRange(q.r.Header)
	if ranged {
		// The range is opened, not skipped to: a node without a copy
		// then asks the holder for just those bytes.
		opt.Offset, opt.Length = off, n
	}
	rd, err := h.files.Open(q.r.Context(), q.path(), opt)
	if errors.Is(err, files.ErrNotFound) {
		if ok, berr := h.bucketExists(q); berr == nil && !ok {
			err = noSuchBucket(q.bucket)
		}
	}
	if err != nil {
		q.fail(err)
		return
	}
	defer rd.Close()
	info := rd.Info()
	if !conditional(q, info) {
		return
	}
	hd := q.w.Header()
	hd.Set("ETag", etagOf(info))
	hd.Set("Accept-Ranges", "bytes")
	setAttrHeaders(q, info)
	// The conditions are answered; ServeContent serves the range.
	for _, c := range []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		q.r.Header.Del(c)
	}
	if rg := q.r.Header.Get("Range"); rg != "" && !rangeSatisfiable(rg, info.Size) {
		hd.Set("Content-Range", "bytes */"+strconv.FormatInt(info.Size, 10))
		q.fail(errorf(http.StatusRequestedRangeNotSatisfiable, CodeInvalidRange, "The requested range %s is not satisfiable: the object has %d bytes", rg, info.Size))
		return
	}
	if ranged {
		hd.Set("Last-Modified", info.Modified.UTC().Format(http.TimeFormat))
		hd.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+rd.Length()-1, info.Size))
		hd.Set("Content-Length", strconv.FormatInt(rd.Length(), 10))
		q.w.WriteHeader(http.StatusPartialContent)
		_, _ = io.Copy(q.w, rd) // a body cut short is seen by the client's length check
		return
	}
	http.ServeContent(q.w, q.r, "", info.Modified, rd)
}

// leadingRange is a request's Range when it is one range from a known
// offset ("bytes=A-B" or "bytes=A-"): its offset and length (0: to the
// end). Other forms (suffixes, several ranges) are left to
// http.ServeContent over the whole object. If-Range plays no part: S3
// ignores it, and getObject drops it before either path.
func leadingRange(h http.Header) (off, n int64, ok bool) {
	spec, found := strings.CutPrefix(h.Get("Range"), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(strings.TrimSpace(spec), "-")
	off, err := strconv.ParseInt(a, 10, 64)
	if err != nil || off < 0 {
		return 0, 0, false
	}
	if b == "" {
		return off, 0, true
	}
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil || end < off {
		return 0, 0, false
	}
	return off, end - off + 1, true
}

// rangeSatisfiable reports whether a single bytes range starts inside an
// object of size bytes (S3 answers InvalidRange otherwise).
func rangeSatisfiable(rg string, size int64) bool {
	spec, ok := strings.CutPrefix(rg, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return true // left to ServeContent
	}
	start, _, _ := strings.Cut(spec, "-")
	if start == "" {
		return size > 0
	}
	n, err := strconv.ParseInt(start, 10, 64)
	return err != nil || n < size
}

func (h *Handler) deleteObject(q *request) {
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	err := h.files.Delete(q.r.Context(), q.path(), files.DeleteOptions{Forwarding: q.forward})
	if err != nil && !errors.Is(err, files.ErrNotFound) {
		q.fail(err)
		return
	}
	q.w.WriteHeader(http.StatusNoContent)
}

type copyResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	ETag         string   `xml:"ETag"`
	LastModified string   `xml:"LastModified"`
}

// copySource is the path named by x-amz-copy-source ("/bucket/key" or
// "bucket/key", URL-encoded), checked and readable by the caller.
func copySource(q *request) (string, error) {
	src := q.r.Header.Get("X-Amz-Copy-Source")
	if u, err := url.PathUnescape(src); err == nil {
		src = u
	}
	src, _, _ = strings.Cut(strings.TrimPrefix(src, "/"), "?versionId=")
	sb, sk, _ := strings.Cut(src, "/")
	if err := validBucket(sb); err != nil {
		return "", err
	}
	if err := validKey(sb, sk); err != nil {
		return "", err
	}
	src = pathOf(sb, sk)
	return src, q.allow(auth.Read, src)
}

func (h *Handler) copyObject(q *request) {
	src, err := copySource(q)
	if err != nil {
		q.fail(err)
		return
	}
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	from, err := h.files.Stat(q.r.Context(), src, files.OpenOptions{Forwarding: q.forward})
	if err != nil {
		q.fail(err)
		return
	}
	if err := copyConditions(q.r, from); err != nil {
		q.fail(err)
		return
	}
	attrs, err := copyAttrs(q, src, from)
	if err != nil {
		q.fail(err)
		return
	}
	// The version judged is the version copied: a write in between fails
	// the copy rather than copying what was not judged.
	o := files.CopyOptions{Forwarding: q.forward, SourceVersion: from.Version, Attrs: &attrs}
	info, err := h.files.Copy(q.r.Context(), src, q.path(), o)
	if err != nil {
		q.fail(err)
		return
	}
	writeXML(q, copyResult{ETag: etagOf(info), LastModified: info.Modified.UTC().Format(time.RFC3339Nano)})
}

// copyConditions checks x-amz-copy-source-if-* against the source.
func copyConditions(r *http.Request, from files.Info) error {
	etag, mod := etagOf(from), from.Modified.Truncate(time.Second)
	fail := func(format string, args ...any) error {
		return errorf(http.StatusPreconditionFailed, CodePreconditionFailed, format, args...)
	}
	m := r.Header.Get("X-Amz-Copy-Source-If-Match")
	if m != "" && !etagMatch(m, etag) && !etagMatch(m, from.ETag) {
		return fail("x-amz-copy-source-if-match %s: the source's ETag is %s", m, etag)
	}
	if n := r.Header.Get("X-Amz-Copy-Source-If-None-Match"); n != "" && etagMatch(n, etag) {
		return fail("x-amz-copy-source-if-none-match %s: the source's ETag is that", n)
	}
	if s := r.Header.Get("X-Amz-Copy-Source-If-Unmodified-Since"); s != "" && m == "" {
		if t, err := http.ParseTime(s); err == nil && mod.After(t) {
			return fail("the source was modified at %s, after x-amz-copy-source-if-unmodified-since", mod.Format(http.TimeFormat))
		}
	}
	if s := r.Header.Get("X-Amz-Copy-Source-If-Modified-Since"); s != "" && r.Header.Get("X-Amz-Copy-Source-If-None-Match") == "" {
		if t, err := http.ParseTime(s); err == nil && !mod.After(t) {
			return fail("the source was not modified since %s (x-amz-copy-source-if-modified-since)", s)
		}
	}
	return nil
}

// copyAttrs is the metadata of a copy: the source's (x-amz-metadata-directive
// COPY, the default) or the request's (REPLACE). A copy is one piece, so
// its ETag is its MD5 even when the source was assembled from parts.
func copyAttrs(q *request, src string, from files.Info) (files.Attrs, error) {
	switch d := q.r.Header.Get("X-Amz-Metadata-Directive"); d {
	case "", "COPY":
		if src == q.path() {
			return files.Attrs{}, errorf(http.StatusBadRequest, CodeInvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata (use x-amz-metadata-directive REPLACE).")
		}
		a := from.Attrs.Clone()
		a.PartsETag = ""
		return a, nil
	case "REPLACE":
		return attrsOf(q.r)
	default:
		return files.Attrs{}, errorf(http.StatusBadRequest, CodeInvalidArgument, "x-amz-metadata-directive %q: COPY or REPLACE", d)
	}
}

type deleteRequest struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   bool     `xml:"Quiet"`
	Objects []struct {
		Key string `xml:"Key"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name      `xml:"DeleteResult"`
	NS      string        `xml:"xmlns,attr"`
	Deleted []deletedKey  `xml:"Deleted"`
	Errors  []deleteError `xml:"Error"`
}

type deletedKey struct {
	Key string `xml:"Key"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// maxDeleteKeys is S3's limit of keys per multi-delete.
const maxDeleteKeys = 1000

func (h *Handler) deleteObjects(q *request) {
	b, _, err := newBody(q.r, q.sig)
	if err != nil {
		q.fail(err)
		return
	}
	var req deleteRequest
	if err := xml.NewDecoder(io.LimitReader(b, 2<<20)).Decode(&req); err != nil {
		if b.failed != nil {
			q.fail(b.failed)
			return
		}
		q.fail(errorf(http.StatusBadRequest, CodeMalformedXML, "The XML you provided was not well-formed or did not validate: %v", err))
		return
	}
	if _, err := io.Copy(io.Discard, b); err != nil {
		q.fail(err)
		return
	}
	if len(req.Objects) == 0 || len(req.Objects) > maxDeleteKeys {
		q.fail(errorf(http.StatusBadRequest, CodeMalformedXML, "a multi-delete names 1 to %d keys; this one names %d", maxDeleteKeys, len(req.Objects)))
		return
	}
	if !h.needBucket(q) {
		return
	}
	res := deleteResult{NS: s3NS}
	for _, o := range req.Objects {
		path := pathOf(q.bucket, o.Key)
		err := validKey(q.bucket, o.Key)
		if err == nil {
			err = q.allow(auth.Write, path)
		}
		if err == nil {
			err = h.files.Delete(q.r.Context(), path, files.DeleteOptions{Forwarding: q.forward})
		}
		if err != nil && !errors.Is(err, files.ErrNotFound) {
			var e *Error
			if !errors.As(err, &e) {
				e = fileError(err)
			}
			res.Errors = append(res.Errors, deleteError{Key: o.Key, Code: e.Code, Message: e.Message})
			continue
		}
		if !req.Quiet {
			res.Deleted = append(res.Deleted, deletedKey{Key: o.Key})
		}
	}
	writeXML(q, res)
}
