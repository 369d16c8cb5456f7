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

// listObjects answers ListObjects (V1) and ListObjectsV2 (list-type=2):
// prefix, delimiter, marker / continuation-token / start-after, max-keys,
// encoding-type=url and fetch-owner.
func (h *Handler) listObjects(q *request) {
	qs := q.r.URL.Query()
	prefix, delim := qs.Get("prefix"), qs.Get("delimiter")
	if err := q.allow(auth.Read, q.bucket+"/"+prefix); err != nil {
		q.fail(err)
		return
	}
	maxKeys := 1000
	if m := qs.Get("max-keys"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 {
			q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "max-keys %q must be a non-negative integer", m))
			return
		}
		maxKeys = min(n, 1000)
	}
	enc := qs.Get("encoding-type")
	if enc != "" && enc != "url" {
		q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "encoding-type %q: the only one is url", enc))
		return
	}
	if !h.needBucket(q) {
		return
	}
	v2 := qs.Get("list-type") == "2"
	res := listResult{NS: s3NS, Name: q.bucket, Prefix: prefix, MaxKeys: maxKeys, Delimiter: delim, EncodingType: enc}
	base := q.bucket + "/"
	after := ""
	if v2 {
		res.StartAfter = qs.Get("start-after")
		res.ContinuationToken = qs.Get("continuation-token")
		if res.StartAfter != "" {
			after = base + res.StartAfter
		}
		if t := res.ContinuationToken; t != "" {
			c, err := base64.RawURLEncoding.DecodeString(t)
			if err != nil {
				q.fail(errorf(http.StatusBadRequest, CodeInvalidArgument, "The continuation token provided is incorrect"))
				return
			}
			after = string(c)
		}
	} else {
		m := qs.Get("marker")
		res.Marker = &m
		switch {
		case m != "" && delim != "" && strings.HasSuffix(m, delim):
			after = "p:" + base + m // a NextMarker that is a common prefix: skip what lies under it
		case m != "":
			after = base + m
		}
	}
	fetchOwner := v2 && qs.Get("fetch-owner") == "true"
	count := 0
	last := ""
	for maxKeys > 0 && count < maxKeys {
		page, err := h.files.List(q.r.Context(), files.ListOptions{Prefix: base + prefix, Delimiter: delim, After: after, Limit: maxKeys - count, Consistent: true})
		if err != nil {
			q.fail(err)
			return
		}
		for _, f := range page.Files {
			key := strings.TrimPrefix(f.Path, base)
			last = key
			if key == BucketMarker || strings.HasPrefix(key, uploadsDir+"/") {
				continue
			}
			o := object{Key: encode(key, enc), LastModified: f.Modified.UTC().Format(time.RFC3339Nano), ETag: f.ETag, Size: f.Size, StorageClass: "STANDARD"}
			if fetchOwner {
				o.Owner = &owner{ID: "mure", DisplayName: "mure"}
			}
			res.Contents = append(res.Contents, o)
			count++
		}
		for _, p := range page.Prefixes {
			if strings.TrimPrefix(p, base) == uploadsDir+"/" {
				last = uploadsDir + "/"
				continue
			}
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encode(strings.TrimPrefix(p, base), enc)})
			last = strings.TrimPrefix(p, base)
			count++
		}
		after = page.Next
		if page.Next == "" {
			break
		}
	}
	if after != "" && maxKeys > 0 {
		res.IsTruncated = true
		if v2 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(after))
		} else if delim != "" {
			res.NextMarker = encode(last, enc)
		}
	}
	if v2 {
		res.KeyCount = &count
		res.Marker = nil
	}
	if !v2 && res.IsTruncated && delim == "" {
		// V1 clients continue from the last key when NextMarker is absent.
		res.NextMarker = ""
	}
	writeXML(q, res)
}

// encode applies encoding-type=url to a key or prefix.
func encode(s, enc string) string {
	if enc != "url" {
		return s
	}
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}
