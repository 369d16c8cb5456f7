package s3

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// The listings of multipart uploads in progress (ListMultipartUploads)
// and of an upload's parts (ListParts), paged as S3 pages them: at most
// max-uploads / max-parts entries (1000 by default and at most), then
// IsTruncated and the markers to ask for the next page with.

// maxListing is the most entries one page of a listing holds.
const maxListing = 1000

// pageSize reads the limit named name of a listing: maxListing when
// absent, at most maxListing, and an InvalidArgument error when it is
// not a non-negative integer.
func pageSize(qs url.Values, name string) (int, error) {
	v := qs.Get(name)
	if v == "" {
		return maxListing, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, CodeInvalidArgument, "Argument %s must be an integer between 0 and 2147483647 (it was %q).", name, v)
	}
	return min(n, maxListing), nil
}

type listPartsResult struct {
	XMLName  xml.Name    `xml:"ListPartsResult"`
	NS       string      `xml:"xmlns,attr"`
	Bucket   string      `xml:"Bucket"`
	Key      string      `xml:"Key"`
	UploadID string      `xml:"UploadId"`
	Marker   int         `xml:"PartNumberMarker"`
	Next     int         `xml:"NextPartNumberMarker,omitempty"`
	MaxParts int         `xml:"MaxParts"`
	Truncate bool        `xml:"IsTruncated"`
	Parts    []partEntry `xml:"Part"`
}

type partEntry struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
}

// listParts lists the parts of upload id after part-number-marker, at
// most max-parts of them.
func (h *Handler) listParts(q *request, id string) {
	if err := q.allow(auth.Read, q.path()); err != nil {
		q.fail(err)
		return
	}
	qs := q.r.URL.Query()
	limit, err := pageSize(qs, "max-parts")
	if err != nil {
		q.fail(err)
		return
	}
	marker := 0
	if v := qs.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "Argument part-number-marker must be a non-negative integer (it was %q).", v))
			return
		}
	}
	if _, ok := h.checkUpload(q, id); !ok {
		return
	}
	ps, err := h.parts(q.r.Context(), q.uploadDir(id), q.forward)
	if err != nil {
		q.fail(err)
		return
	}
	after := sort.Search(len(ps), func(i int) bool { return ps[i].n > marker })
	ps = ps[after:]
	res := listPartsResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: id, Marker: marker, MaxParts: limit}
	if len(ps) > limit {
		ps, res.Truncate = ps[:limit], true
	}
	for _, p := range ps {
		res.Parts = append(res.Parts, partEntry{PartNumber: p.n, LastModified: p.mod.UTC().Format(time.RFC3339Nano), ETag: `"` + p.md5 + `"`, Size: p.size})
	}
	if res.Truncate && len(ps) > 0 {
		res.Next = ps[len(ps)-1].n
	}
	writeXML(q, res)
}

type listUploadsResult struct {
	XMLName        xml.Name       `xml:"ListMultipartUploadsResult"`
	NS             string         `xml:"xmlns,attr"`
	Bucket         string         `xml:"Bucket"`
	KeyMarker      string         `xml:"KeyMarker"`
	UploadIDMarker string         `xml:"UploadIdMarker"`
	NextKey        string         `xml:"NextKeyMarker,omitempty"`
	NextUploadID   string         `xml:"NextUploadIdMarker,omitempty"`
	Prefix         string         `xml:"Prefix,omitempty"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	MaxUploads     int            `xml:"MaxUploads"`
	IsTruncated    bool           `xml:"IsTruncated"`
	Uploads        []uploadEntry  `xml:"Upload"`
	CommonPrefixes []commonPrefix `xml:"CommonPrefixes"`
}

type uploadEntry struct {
	Key       string `xml:"Key"`
	UploadID  string `xml:"UploadId"`
	Initiated string `xml:"Initiated"`
}

// listUploads lists a bucket's uploads in progress whose key has the
// given prefix, in key order and, for one key, in upload ID order (S3
// orders one key's uploads by initiation time; IDs here are random, the
// order is stable and the markers exact). With a delimiter, the keys that
// hold it after the prefix are rolled up, as in ListObjects, into common
// prefixes, each one entry of the page in its place in key order. It
// pages with max-uploads after key-marker (and, for that key,
// upload-id-marker); a key-marker that is a common prefix skips what lies
// under it. Uploads are stored by ID, not key, so each page reads every
// upload's key: a listing costs one read per upload in progress, which the
// sweep of abandoned uploads keeps few.
func (h *Handler) listUploads(q *request) {
	if err := q.allow(auth.Read, q.bucket+"/"); err != nil {
		q.fail(err)
		return
	}
	qs := q.r.URL.Query()
	limit, err := pageSize(qs, "max-uploads")
	if err != nil {
		q.fail(err)
		return
	}
	prefix, delim := qs.Get("prefix"), qs.Get("delimiter")
	keyMarker, idMarker := qs.Get("key-marker"), qs.Get("upload-id-marker")
	if keyMarker == "" {
		idMarker = "" // S3 ignores an upload-id-marker without a key-marker
	}
	if idMarker != "" && !validUploadID(idMarker) {
		q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "Invalid uploadId marker %q: it must be an upload ID this listing returned.", idMarker))
		return
	}
	if !h.needBucket(q) {
		return
	}
	ups, err := h.uploadsOf(q, prefix)
	if err != nil {
		q.fail(err)
		return
	}
	markerIsPrefix := delim != "" && len(keyMarker) > len(prefix) && strings.HasPrefix(keyMarker, prefix) && strings.HasSuffix(keyMarker, delim)
	from := sort.Search(len(ups), func(i int) bool {
		u := ups[i]
		return u.Key > keyMarker || (u.Key == keyMarker && idMarker != "" && u.UploadID > idMarker)
	})
	for markerIsPrefix && from < len(ups) && strings.HasPrefix(ups[from].Key, keyMarker) {
		from++
	}
	res := listUploadsResult{NS: s3NS, Bucket: q.bucket, KeyMarker: keyMarker, UploadIDMarker: idMarker, Prefix: prefix, Delimiter: delim, MaxUploads: limit}
	n, lastKey, lastID := 0, "", ""
	for _, u := range ups[from:] {
		cp := rollUp(u.Key, prefix, delim)
		if cp != "" && cp == lastKey {
			continue // one more upload under the common prefix just listed
		}
		if n == limit {
			res.IsTruncated = true
			break
		}
		n++
		if cp != "" {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: cp})
			lastKey, lastID = cp, ""
			continue
		}
		res.Uploads = append(res.Uploads, u)
		lastKey, lastID = u.Key, u.UploadID
	}
	if res.IsTruncated && n > 0 {
		res.NextKey, res.NextUploadID = lastKey, lastID
	}
	writeXML(q, res)
}

// rollUp returns the common prefix key falls under in a listing with
// prefix and delimiter (up to and including the first delimiter after
// the prefix), or "" when it is listed itself.
func rollUp(key, prefix, delim string) string {
	if delim == "" {
		return ""
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delim)]
}

// uploadsOf reads every upload in progress of q's bucket whose key has
// prefix, sorted by key and upload ID.
func (h *Handler) uploadsOf(q *request, prefix string) ([]uploadEntry, error) {
	ctx := q.r.Context()
	dir := q.bucket + "/" + uploadsDir + "/"
	var out []uploadEntry
	for after := ""; ; {
		page, err := h.files.List(ctx, files.ListOptions{Prefix: dir, Delimiter: "/", After: after, Limit: 1000, Consistent: true})
		if err != nil {
			return nil, err
		}
		for _, p := range page.Prefixes {
			id := strings.TrimSuffix(strings.TrimPrefix(p, dir), "/")
			info, err := h.files.Stat(ctx, p+"key", files.OpenOptions{Forwarding: q.forward})
			if err != nil {
				continue // completed or aborted meanwhile
			}
			key, err := h.readSmall(ctx, p+"key", q.forward)
			if err != nil || !strings.HasPrefix(key, prefix) {
				continue
			}
			out = append(out, uploadEntry{Key: key, UploadID: id, Initiated: info.Modified.UTC().Format(time.RFC3339Nano)})
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].UploadID < out[j].UploadID
	})
	return out, nil
}
