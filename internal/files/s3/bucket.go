package s3

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// Region is the location every bucket answers; clients may sign with
// any region.
const Region = "us-east-1"

const s3NS = "http://s3.amazonaws.com/doc/2006-03-01/"

// writeXML answers v as S3 XML with status 200.
func writeXML(q *request, v any) {
	q.w.Header().Set("Content-Type", "application/xml")
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(q.w).Encode(v)
}

// bucketExists reports whether the bucket's marker or any file under it
// exists.
func (h *Handler) bucketExists(q *request) (bool, error) {
	if _, err := h.files.Stat(q.r.Context(), q.bucket+"/"+BucketMarker, files.OpenOptions{Forwarding: q.forward}); err == nil {
		return true, nil
	} else if !errors.Is(err, files.ErrNotFound) {
		return false, err
	}
	page, err := h.files.List(q.r.Context(), files.ListOptions{Prefix: q.bucket + "/", Limit: 1, Consistent: true})
	if err != nil {
		return false, err
	}
	return len(page.Files) > 0, nil
}

func noSuchBucket(b string) *Error {
	return errorf(http.StatusNotFound, CodeNoSuchBucket, "The specified bucket %q does not exist (PUT /%s creates it).", b, b)
}

// needBucket fails the request unless its bucket exists.
func (h *Handler) needBucket(q *request) bool {
	ok, err := h.bucketExists(q)
	if err != nil {
		q.fail(err)
		return false
	}
	if !ok {
		q.fail(noSuchBucket(q.bucket))
	}
	return ok
}

func (h *Handler) createBucket(q *request) {
	if err := q.allow(auth.Write, q.bucket+"/"); err != nil {
		q.fail(err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(q.r.Body, 64<<10)) // a CreateBucketConfiguration (location) is accepted and ignored
	ok, err := h.bucketExists(q)
	if err != nil {
		q.fail(err)
		return
	}
	if ok {
		q.fail(errorf(http.StatusConflict, CodeBucketAlreadyOwned, "The bucket %q exists already.", q.bucket))
		return
	}
	_, err = h.files.Put(q.r.Context(), q.bucket+"/"+BucketMarker, strings.NewReader(""), files.PutOptions{Forwarding: q.forward, Size: 0})
	if err != nil {
		q.fail(err)
		return
	}
	q.w.Header().Set("Location", "/"+q.bucket)
	q.w.WriteHeader(http.StatusOK)
}

func (h *Handler) deleteBucket(q *request) {
	if err := q.allow(auth.Write, q.bucket+"/"); err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	page, err := h.files.List(q.r.Context(), files.ListOptions{Prefix: q.bucket + "/", Limit: 2, Consistent: true})
	if err != nil {
		q.fail(err)
		return
	}
	for _, f := range page.Files {
		switch k := strings.TrimPrefix(f.Path, q.bucket+"/"); {
		case k == BucketMarker:
		case strings.HasPrefix(k, uploadsDir+"/"):
			q.fail(errorf(http.StatusConflict, CodeBucketNotEmpty, "The bucket %q has multipart uploads in progress: complete or abort them first.", q.bucket))
			return
		default:
			q.fail(errorf(http.StatusConflict, CodeBucketNotEmpty, "The bucket %q is not empty (it holds %q, and perhaps more).", q.bucket, k))
			return
		}
	}
	err = h.files.Delete(q.r.Context(), q.bucket+"/"+BucketMarker, files.DeleteOptions{Forwarding: q.forward})
	if err != nil && !errors.Is(err, files.ErrNotFound) {
		q.fail(err)
		return
	}
	q.w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) headBucket(q *request) {
	if err := q.allow(auth.Read, q.bucket+"/"); err != nil {
		q.fail(err)
		return
	}
	if h.needBucket(q) {
		q.w.Header().Set("x-amz-bucket-region", Region)
		q.w.WriteHeader(http.StatusOK)
	}
}

func (h *Handler) location(q *request) {
	if err := q.allow(auth.Read, q.bucket+"/"); err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	// us-east-1 is answered as the empty constraint, as S3 does.
	writeXML(q, struct {
		XMLName xml.Name `xml:"LocationConstraint"`
		NS      string   `xml:"xmlns,attr"`
	}{NS: s3NS})
}

type bucketEntry struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

type listBucketsResult struct {
	XMLName xml.Name      `xml:"ListAllMyBucketsResult"`
	NS      string        `xml:"xmlns,attr"`
	Owner   owner         `xml:"Owner"`
	Buckets []bucketEntry `xml:"Buckets>Bucket"`
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

// listBuckets lists the top-level folders whose names are valid bucket
// names and that the caller may read.
func (h *Handler) listBuckets(q *request) {
	if q.who.Via == auth.ViaAnonymous {
		q.fail(errorf(http.StatusForbidden, CodeAccessDenied, "listing the buckets needs a signed request"))
		return
	}
	res := listBucketsResult{NS: s3NS, Owner: owner{ID: q.who.Name(), DisplayName: q.who.Name()}}
	after := ""
	for {
		page, err := h.files.List(q.r.Context(), files.ListOptions{Delimiter: "/", After: after, Limit: 1000, Consistent: true})
		if err != nil {
			q.fail(err)
			return
		}
		for _, p := range page.Prefixes {
			name := strings.TrimSuffix(p, "/")
			if validBucket(name) == nil && q.who.Allowed(auth.Read, p) {
				res.Buckets = append(res.Buckets, bucketEntry{Name: name, CreationDate: time.Unix(0, 0).UTC().Format(time.RFC3339)})
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	writeXML(q, res)
}
