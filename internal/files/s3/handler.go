package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// Files is the file API this face calls (files.Service is one).
type Files interface {
	Put(ctx context.Context, path string, body io.Reader, o files.PutOptions) (files.Info, error)
	Open(ctx context.Context, path string, o files.OpenOptions) (*files.Reader, error)
	Stat(ctx context.Context, path string, o files.OpenOptions) (files.Info, error)
	Delete(ctx context.Context, path string, o files.DeleteOptions) error
	List(ctx context.Context, o files.ListOptions) (files.ListPage, error)
	Copy(ctx context.Context, src, dst string, o files.CopyOptions) (files.Info, error)
}

// BucketMarker is the file that makes an empty folder a bucket; it is
// hidden from S3 listings and refused as an S3 key.
const BucketMarker = ".s3bucket"

// Handler answers S3 requests (path-style: /BUCKET/KEY).
type Handler struct {
	files     Files
	verify    verifier
	anonymous auth.Principal
	log       *slog.Logger
	// admission and writeAdmission bound the requests served at once
	// (nil: no bound); see admit.
	admission, writeAdmission Admission
}

// NewHandler returns the S3 face over fs, checking signatures with keys;
// anonymous holds the grants of callers without a signature.
func NewHandler(fs Files, keys Keys, anonymous []auth.Grant, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{files: fs, verify: verifier{keys: keys, now: time.Now}, anonymous: auth.Anonymous(anonymous), log: log}
}

// open lets every request do everything, as the rest of a node's API
// with --auth=false: unsigned ones, and signed ones whatever their key and
// secret (decision 0060).
func (h *Handler) open() {
	h.anonymous = openPrincipal
	h.verify.open = true
}

// request is one S3 call being answered.
type request struct {
	w       http.ResponseWriter
	r       *http.Request
	id      string
	who     auth.Principal
	sig     *signed
	bucket  string
	key     string
	forward files.Forwarding
}

func (q *request) fail(err error) { writeError(q.w, q.r, q.id, err) }

// allow checks that the caller may do a on path.
func (q *request) allow(a auth.Action, path string) error {
	if q.who.Allowed(a, path) {
		return nil
	}
	return errorf(http.StatusForbidden, CodeAccessDenied, "%s may not %s %q", q.who.Name(), a, path)
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := &request{w: w, r: r, id: newRequestID(), forward: files.Forwarding{Forward: true}}
	w.Header().Set("x-amz-request-id", q.id)
	w.Header().Set("Server", "mure")
	if authenticated(r) {
		s, err := h.verify.verify(r)
		if err != nil {
			h.log.Info("s3 request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			q.fail(err)
			return
		}
		q.sig, q.who = s, s.principal
	} else {
		q.who = h.anonymous
	}
	// after the signature's check: a request that fails it takes no slot
	release, ok := h.admit(q)
	if !ok {
		return
	}
	defer release()
	path := strings.TrimPrefix(r.URL.Path, "/")
	q.bucket, q.key, _ = strings.Cut(path, "/")
	if q.bucket == "" {
		if r.Method != http.MethodGet {
			q.fail(errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s on the service is not supported (GET lists the buckets)", r.Method))
			return
		}
		h.listBuckets(q)
		return
	}
	if err := validBucket(q.bucket); err != nil {
		q.fail(err)
		return
	}
	if q.key == "" {
		h.bucketOp(q)
		return
	}
	if err := validKey(q.bucket, q.key); err != nil {
		q.fail(err)
		return
	}
	h.objectOp(q)
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// validBucket checks S3's bucket naming rules.
func validBucket(b string) error {
	if !bucketRE.MatchString(b) || strings.Contains(b, "..") {
		return errorf(http.StatusBadRequest, CodeInvalidBucketName, "bucket name %q: 3 to 63 lower case letters, digits, '.' and '-', starting and ending with a letter or digit", b)
	}
	return nil
}

func (h *Handler) bucketOp(q *request) {
	r := q.r
	qs := r.URL.Query()
	switch {
	case r.Method == http.MethodPut && len(qs) == 0:
		h.createBucket(q)
	case r.Method == http.MethodDelete && len(qs) == 0:
		h.deleteBucket(q)
	case r.Method == http.MethodHead:
		h.headBucket(q)
	case r.Method == http.MethodGet && qs.Has("location"):
		h.location(q)
	case r.Method == http.MethodGet && qs.Has("uploads"):
		h.listUploads(q)
	case r.Method == http.MethodGet && (len(qs) == 0 || qs.Has("list-type") || qs.Has("prefix") || qs.Has("delimiter") || qs.Has("marker") || qs.Has("max-keys") || qs.Has("encoding-type")):
		h.listObjects(q)
	case r.Method == http.MethodPost && qs.Has("delete"):
		h.deleteObjects(q)
	default:
		q.fail(errorf(http.StatusNotImplemented, CodeNotImplemented, "%s %s?%s is not supported by this S3 API (docs/access.md lists what is)", r.Method, r.URL.Path, r.URL.RawQuery))
	}
}

func (h *Handler) objectOp(q *request) {
	r := q.r
	qs := r.URL.Query()
	switch id := qs.Get("uploadId"); {
	case r.Method == http.MethodPost && qs.Has("uploads"):
		h.createUpload(q)
		return
	case r.Method == http.MethodPut && qs.Has("uploadId"):
		h.uploadPart(q, id)
		return
	case r.Method == http.MethodPost && qs.Has("uploadId"):
		h.completeUpload(q, id)
		return
	case r.Method == http.MethodDelete && qs.Has("uploadId"):
		h.abortUpload(q, id)
		return
	case r.Method == http.MethodGet && qs.Has("uploadId"):
		h.listParts(q, id)
		return
	}
	for _, sub := range []string{"uploads", "uploadId", "partNumber", "tagging", "acl", "retention", "legal-hold", "torrent", "attributes"} {
		if qs.Has(sub) {
			q.fail(errorf(http.StatusNotImplemented, CodeNotImplemented, "%s on objects (?%s) is not supported yet (docs/access.md lists what is)", r.Method, sub))
			return
		}
	}
	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			h.copyObject(q)
			return
		}
		h.putObject(q)
	case http.MethodGet, http.MethodHead:
		h.getObject(q)
	case http.MethodDelete:
		h.deleteObject(q)
	default:
		q.fail(errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s on an object is not supported", r.Method))
	}
}
