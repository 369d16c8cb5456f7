package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// Multipart uploads (decision 0021). An upload is a hidden folder of its
// bucket, BUCKET/.s3uploads/ID/: the file "key" holds the object's key
// and, as its attributes, the object's metadata given at creation; part N is the file "NNNNN" and its MD5 (its ETag) the file "NNNNN.md5",
// written once the part is stored (a part without it is not there yet).
// Completing streams the parts, in
// order, into one Put of the object and removes the folder: the object
// appears whole or not at all.

// uploadsDir is the hidden folder of a bucket's multipart uploads.
const uploadsDir = ".s3uploads"

const (
	minPartSize = 5 << 20 // every part but the last (S3's limit)
	maxParts    = 10000
)

func (q *request) uploadDir(id string) string { return q.bucket + "/" + uploadsDir + "/" + id + "/" }

func newUploadID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func noSuchUpload(id string) *Error {
	return errorf(http.StatusNotFound, "NoSuchUpload", "The specified multipart upload %q does not exist: it was completed, aborted, or never made.", id)
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (h *Handler) createUpload(q *request) {
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
	id := newUploadID()
	_, err = h.files.Put(q.r.Context(), q.uploadDir(id)+"key", strings.NewReader(q.key), files.PutOptions{Forwarding: q.forward, Size: int64(len(q.key)), Attrs: attrs})
	if err != nil {
		q.fail(err)
		return
	}
	writeXML(q, initiateResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: id})
}

// checkUpload fails the request unless the upload exists for its key;
// it returns the object's metadata given at the upload's creation.
func (h *Handler) checkUpload(q *request, id string) (files.Attrs, bool) {
	if !validUploadID(id) {
		q.fail(noSuchUpload(id))
		return files.Attrs{}, false
	}
	rd, err := h.files.Open(q.r.Context(), q.uploadDir(id)+"key", files.OpenOptions{Forwarding: q.forward})
	if errors.Is(err, files.ErrNotFound) {
		q.fail(noSuchUpload(id))
		return files.Attrs{}, false
	}
	if err != nil {
		q.fail(err)
		return files.Attrs{}, false
	}
	defer rd.Close()
	key, err := io.ReadAll(io.LimitReader(rd, 2048))
	if err != nil {
		q.fail(err)
		return files.Attrs{}, false
	}
	if string(key) != q.key {
		q.fail(errorf(http.StatusBadRequest, CodeInvalidRequest, "upload %s is for the key %q, not %q", id, key, q.key))
		return files.Attrs{}, false
	}
	return rd.Info().Attrs, true
}

// part is one stored part of an upload.
type part struct {
	n    int
	md5  string
	path string
	size int64
	mod  time.Time
}

// parts lists an upload's parts in part order (those whose MD5 is
// stored).
func (h *Handler) parts(ctx context.Context, dir string, fwd files.Forwarding) ([]part, error) {
	var out []part
	after := ""
	for {
		page, err := h.files.List(ctx, files.ListOptions{Prefix: dir, After: after, Limit: 1000, Consistent: true})
		if err != nil {
			return nil, err
		}
		for _, f := range page.Files {
			num, isSum := strings.CutSuffix(strings.TrimPrefix(f.Path, dir), ".md5")
			n, err := strconv.Atoi(num)
			if err != nil || len(num) != 5 {
				continue
			}
			if !isSum {
				out = append(out, part{n: n, path: f.Path, size: f.Size, mod: f.Modified})
				continue
			}
			if len(out) > 0 && out[len(out)-1].n == n {
				sum, err := h.readSmall(ctx, f.Path, fwd)
				if err != nil {
					return nil, err
				}
				out[len(out)-1].md5 = sum
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	done := out[:0]
	for _, p := range out {
		if p.md5 != "" {
			done = append(done, p)
		}
	}
	return done, nil
}

// readSmall reads a small file whole.
func (h *Handler) readSmall(ctx context.Context, path string, fwd files.Forwarding) (string, error) {
	rd, err := h.files.Open(ctx, path, files.OpenOptions{Forwarding: fwd})
	if err != nil {
		return "", err
	}
	defer rd.Close()
	b, err := io.ReadAll(io.LimitReader(rd, 4096))
	return string(b), err
}

func (h *Handler) uploadPart(q *request, id string) {
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	n, err := strconv.Atoi(q.r.URL.Query().Get("partNumber"))
	if err != nil || n < 1 || n > maxParts {
		q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "Part number must be an integer between 1 and %d, inclusive", maxParts))
		return
	}
	if _, ok := h.checkUpload(q, id); !ok {
		return
	}
	var src io.Reader
	var size int64
	var failed func() *Error
	copying := q.r.Header.Get("X-Amz-Copy-Source") != ""
	if copying {
		rd, err := h.openCopySource(q)
		if err != nil {
			q.fail(err)
			return
		}
		defer rd.Close()
		src, size, failed = rd, rd.Length(), func() *Error { return nil }
	} else {
		b, n, err := newBody(q.r, q.sig)
		if err != nil {
			q.fail(err)
			return
		}
		src, size, failed = b, n, func() *Error { return b.failed }
	}
	sum := md5.New()
	name := fmt.Sprintf("%s%05d", q.uploadDir(id), n)
	info, err := h.files.Put(q.r.Context(), name, io.TeeReader(src, sum), files.PutOptions{Forwarding: q.forward, Size: size})
	if e := failed(); e != nil {
		err = e
	}
	if err != nil {
		q.fail(err)
		return
	}
	md := hex.EncodeToString(sum.Sum(nil))
	if _, err := h.files.Put(q.r.Context(), name+".md5", strings.NewReader(md), files.PutOptions{Forwarding: q.forward, Size: int64(len(md))}); err != nil {
		q.fail(err)
		return
	}
	if copying {
		writeXML(q, copyPartResult{ETag: `"` + md + `"`, LastModified: info.Modified.UTC().Format(time.RFC3339Nano)})
		return
	}
	q.w.Header().Set("ETag", `"`+md+`"`)
	q.w.WriteHeader(http.StatusOK)
}

type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	ETag         string   `xml:"ETag"`
	LastModified string   `xml:"LastModified"`
}

// openCopySource opens the object named by x-amz-copy-source, at the
// range x-amz-copy-source-range when given (UploadPartCopy).
func (h *Handler) openCopySource(q *request) (*files.Reader, error) {
	src, err := copySource(q)
	if err != nil {
		return nil, err
	}
	o := files.OpenOptions{Forwarding: q.forward}
	if rg := q.r.Header.Get("X-Amz-Copy-Source-Range"); rg != "" {
		a, b, ok := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		first, err1 := strconv.ParseInt(a, 10, 64)
		last, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || !strings.HasPrefix(rg, "bytes=") || err1 != nil || err2 != nil || first < 0 || last < first {
			return nil, errorf(http.StatusBadRequest, CodeInvalidArgument, "x-amz-copy-source-range %q is not bytes=FIRST-LAST", rg)
		}
		info, err := h.files.Stat(q.r.Context(), src, o)
		if err != nil {
			return nil, err
		}
		if last >= info.Size {
			return nil, errorf(http.StatusBadRequest, CodeInvalidRange, "x-amz-copy-source-range %s: the source has %d bytes", rg, info.Size)
		}
		o.Offset, o.Length = first, last-first+1
	}
	return h.files.Open(q.r.Context(), src, o)
}

type completeRequest struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		PartNumber int    `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

func (h *Handler) completeUpload(q *request, id string) {
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	var req completeRequest
	if err := xml.NewDecoder(io.LimitReader(q.r.Body, 4<<20)).Decode(&req); err != nil || len(req.Parts) == 0 {
		q.fail(errorf(http.StatusBadRequest, CodeMalformedXML, "The XML you provided was not well-formed or did not validate against our published schema (it must list at least one part): %v", err))
		return
	}
	attrs, ok := h.checkUpload(q, id)
	if !ok {
		return
	}
	stored, err := h.parts(q.r.Context(), q.uploadDir(id), q.forward)
	if err != nil {
		q.fail(err)
		return
	}
	byNum := map[int]part{}
	for _, p := range stored {
		byNum[p.n] = p
	}
	var chosen []part
	var sums bytes.Buffer
	var total int64
	for i, rp := range req.Parts {
		if i > 0 && rp.PartNumber <= req.Parts[i-1].PartNumber {
			q.fail(errorf(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order: part %d after part %d.", rp.PartNumber, req.Parts[i-1].PartNumber))
			return
		}
		p, ok := byNum[rp.PartNumber]
		if !ok || strings.Trim(rp.ETag, `"`) != p.md5 {
			q.fail(errorf(http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found or its ETag did not match: part %d with ETag %s.", rp.PartNumber, rp.ETag))
			return
		}
		chosen = append(chosen, p)
	}
	// Sizes are judged once every listed part is known to be there, as S3
	// does.
	for i, p := range chosen {
		if i < len(chosen)-1 && p.size < minPartSize {
			q.fail(errorf(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size: part %d has %d bytes; every part but the last needs at least %d.", p.n, p.size, minPartSize))
			return
		}
		raw, _ := hex.DecodeString(p.md5)
		sums.Write(raw)
		total += p.size
	}
	attrs.PartsETag = fmt.Sprintf(`"%x-%d"`, md5.Sum(sums.Bytes()), len(chosen))
	// Assembling a large object takes longer than clients wait for a
	// first byte: as S3 does, the answer starts now (200) and whitespace
	// keeps it alive; an error then comes in the body, where clients
	// look for it.
	keep := startKeepAlive(q.w, keepAliveEvery)
	body := &partsReader{ctx: q.r.Context(), files: h.files, parts: chosen, fwd: q.forward}
	_, err = h.files.Put(q.r.Context(), q.path(), body, files.PutOptions{Forwarding: q.forward, Size: total, Attrs: attrs})
	body.close()
	keep.stop()
	if err != nil {
		writeErrorBody(q, err)
		return
	}
	h.removeUpload(q, id)
	_ = xml.NewEncoder(q.w).Encode(completeResult{NS: s3NS, Location: "/" + q.bucket + "/" + q.key, Bucket: q.bucket, Key: q.key, ETag: attrs.PartsETag})
}

// keepAliveEvery is how often a long CompleteMultipartUpload writes a
// space.
const keepAliveEvery = 10 * time.Second

// keepAlive writes a space to an answer every interval until stopped.
type keepAlive struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// startKeepAlive answers 200 with the XML declaration and keeps the
// answer alive.
func startKeepAlive(w http.ResponseWriter, every time.Duration) *keepAlive {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(xml.Header))
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	k := &keepAlive{done: make(chan struct{})}
	k.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-k.done:
				return
			case <-t.C:
				_, _ = w.Write([]byte(" "))
				_ = rc.Flush()
			}
		}
	})
	return k
}

// stop ends the keep-alive; the answer is the caller's again.
func (k *keepAlive) stop() {
	close(k.done)
	k.wg.Wait()
}

// partsReader streams parts in order, each opened when the one before
// ends.
type partsReader struct {
	ctx   context.Context
	files Files
	parts []part
	fwd   files.Forwarding
	cur   *files.Reader
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.parts) == 0 {
				return 0, io.EOF
			}
			rd, err := p.files.Open(p.ctx, p.parts[0].path, files.OpenOptions{Forwarding: p.fwd})
			if err != nil {
				return 0, fmt.Errorf("open part %d: %w", p.parts[0].n, err)
			}
			p.cur, p.parts = rd, p.parts[1:]
		}
		n, err := p.cur.Read(b)
		if err == io.EOF {
			p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (p *partsReader) close() {
	if p.cur != nil {
		p.cur.Close()
	}
}

// removeUpload deletes an upload's folder.
func (h *Handler) removeUpload(q *request, id string) {
	h.removeDir(context.WithoutCancel(q.r.Context()), q.uploadDir(id))
}

// removeDir deletes an upload's folder dir: its parts, then its key
// file (so an upload whose removal stopped midway is still listed, and
// removed again).
func (h *Handler) removeDir(ctx context.Context, dir string) {
	fwd := files.Forwarding{Forward: true}
	for after := ""; ; {
		page, err := h.files.List(ctx, files.ListOptions{Prefix: dir, After: after, Limit: 1000, Consistent: true})
		if err != nil {
			h.log.Warn("s3: could not list an upload to remove it", "upload", dir, "err", err)
			return
		}
		for _, f := range page.Files {
			if !strings.HasSuffix(f.Path, "/key") {
				_ = h.files.Delete(ctx, f.Path, files.DeleteOptions{Forwarding: fwd})
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	_ = h.files.Delete(ctx, dir+"key", files.DeleteOptions{Forwarding: fwd})
}

func (h *Handler) abortUpload(q *request, id string) {
	if err := q.allow(auth.Write, q.path()); err != nil {
		q.fail(err)
		return
	}
	if _, ok := h.checkUpload(q, id); !ok {
		return
	}
	h.removeUpload(q, id)
	q.w.WriteHeader(http.StatusNoContent)
}
