package s3

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

type object struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        *owner `xml:"Owner,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// listResult is ListBucketResult of V1 and V2 (the fields of the other
// version stay empty and are omitted).
type listResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	NS                    string         `xml:"xmlns,attr"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Marker                *string        `xml:"Marker,omitempty"`
	NextMarker            string         `xml:"NextMarker,omitempty"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              *int           `xml:"KeyCount,omitempty"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []object       `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

// listQuery is a parsed ListObjects or ListObjectsV2 request.
type listQuery struct {
	v2, fetchOwner bool
	base, after    string // base: "BUCKET/"; after: the file API's cursor
}

// listObjects answers ListObjects (V1) and ListObjectsV2 (list-type=2):
// prefix, delimiter, marker / continuation-token / start-after, max-keys,
// encoding-type=url and fetch-owner.
func (h *Handler) listObjects(q *request) {
	res, lq, err := parseList(q)
	if err == nil {
		err = q.allow(auth.Read, q.bucket+"/"+res.Prefix)
	}
	if err != nil {
		q.fail(err)
		return
	}
	if !h.needBucket(q) {
		return
	}
	count, last, next, err := h.collect(q, &res, lq)
	if err != nil {
		q.fail(err)
		return
	}
	if next != "" && res.MaxKeys > 0 {
		res.IsTruncated = true
		if lq.v2 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(next))
		} else if res.Delimiter != "" {
			res.NextMarker = encode(last, res.EncodingType) // without a delimiter, V1 clients continue from the last key
		}
	}
	if lq.v2 {
		res.KeyCount = &count
	}
	writeXML(q, res)
}

// parseList reads a listing's parameters into the result's echo fields
// and the file API's cursor.
func parseList(q *request) (listResult, listQuery, error) {
	qs := q.r.URL.Query()
	lq := listQuery{v2: qs.Get("list-type") == "2", base: q.bucket + "/"}
	lq.fetchOwner = lq.v2 && qs.Get("fetch-owner") == "true"
	res := listResult{NS: s3NS, Name: q.bucket, Prefix: qs.Get("prefix"), MaxKeys: 1000, Delimiter: qs.Get("delimiter"), EncodingType: qs.Get("encoding-type")}
	if m := qs.Get("max-keys"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 {
			return res, lq, errorf(http.StatusBadRequest, CodeInvalidArgument, "max-keys %q must be a non-negative integer", m)
		}
		res.MaxKeys = min(n, 1000)
	}
	if e := res.EncodingType; e != "" && e != "url" {
		return res, lq, errorf(http.StatusBadRequest, CodeInvalidArgument, "encoding-type %q: the only one is url", e)
	}
	if !lq.v2 {
		m := qs.Get("marker")
		res.Marker = &m
		switch {
		case len(m) > len(res.Prefix) && strings.HasPrefix(m, res.Prefix) && res.Delimiter != "" && strings.HasSuffix(m, res.Delimiter):
			lq.after = "p:" + lq.base + m // a NextMarker that is a common prefix: skip what lies under it
		case m != "":
			lq.after = pathOf(q.bucket, m)
		}
		return res, lq, nil
	}
	res.StartAfter, res.ContinuationToken = qs.Get("start-after"), qs.Get("continuation-token")
	if res.StartAfter != "" {
		lq.after = pathOf(q.bucket, res.StartAfter)
	}
	if t := res.ContinuationToken; t != "" {
		c, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil {
			return res, lq, errorf(http.StatusBadRequest, CodeInvalidArgument, "The continuation token provided is incorrect")
		}
		lq.after = string(c)
	}
	return res, lq, nil
}

// collect fills res with up to MaxKeys keys and common prefixes, hiding
// the bucket's own files. It returns how many it put, the key or prefix
// of the last file seen (in the file API's order, where a folder key
// sorts as its marker file), and the cursor after it ("" at the end).
func (h *Handler) collect(q *request, res *listResult, lq listQuery) (count int, last, next string, err error) {
	enc, next := res.EncodingType, lq.after
	lastPath := ""
	for res.MaxKeys > 0 && count < res.MaxKeys {
		page, err := h.files.List(q.r.Context(), files.ListOptions{Prefix: lq.base + res.Prefix, Delimiter: res.Delimiter, After: next, Limit: res.MaxKeys - count, Consistent: true})
		if err != nil {
			return 0, "", "", err
		}
		for _, f := range page.Files {
			lastPath = max(lastPath, f.Path)
			key, hidden := keyOf(lq.base, f.Path)
			if hidden || !strings.HasPrefix(key, res.Prefix) { // "a/" matched as "a/.s3folder" by the prefix "a/.s3"
				continue
			}
			o := object{Key: encode(key, enc), LastModified: f.Modified.UTC().Format(time.RFC3339Nano), ETag: etagOf(f), Size: f.Size, StorageClass: "STANDARD"}
			if lq.fetchOwner {
				o.Owner = &owner{ID: "mure", DisplayName: "mure"}
			}
			res.Contents = append(res.Contents, o)
			count++
		}
		for _, p := range page.Prefixes {
			lastPath = max(lastPath, p)
			p = strings.TrimPrefix(p, lq.base)
			if p != uploadsDir+"/" {
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encode(p, enc)})
				count++
			}
		}
		if next = page.Next; next == "" {
			break
		}
	}
	last, _ = keyOf(lq.base, lastPath)
	return count, last, next, nil
}

// encode applies encoding-type=url to a key or prefix.
func encode(s, enc string) string {
	if enc != "url" {
		return s
	}
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}
