package client

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// FileInfo describes one version of a file.
type FileInfo struct {
	Path     string    `json:"path"`
	Version  uint64    `json:"version"`
	ETag     string    `json:"etag"` // unquoted
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256,omitempty"`
	Modified time.Time `json:"modified"`
}

// filesPath validates a key lightly and returns "/files/" + its escaped
// segments. The node does the full validation (docs/api.md, Paths).
func filesPath(prefix, p string) (string, error) {
	if p == "" || len(p) > 1024 {
		return "", fmt.Errorf("mure: invalid path %q: must be 1-1024 bytes", p)
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("mure: invalid path %q: empty, . or .. segment", p)
		}
		segs[i] = url.PathEscape(s)
	}
	return prefix + strings.Join(segs, "/"), nil
}

// unquoteETag strips W/ and the quotes of an ETag header value.
func unquoteETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// quoteETag quotes an ETag for If-Match / If-None-Match unless it already is.
func quoteETag(s string) string {
	if s == "*" || strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `W/"`) {
		return s
	}
	return `"` + s + `"`
}

// infoFromHeader builds a FileInfo from the headers of a GET or HEAD answer.
func infoFromHeader(path string, resp *http.Response) FileInfo {
	h := resp.Header
	fi := FileInfo{Path: path, ETag: unquoteETag(h.Get("ETag")), SHA256: h.Get("X-Mure-Sha256"), Size: -1}
	fi.Version, _ = strconv.ParseUint(h.Get("X-Mure-Version"), 10, 64)
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		fi.Modified = t
	}
	if cr := h.Get("Content-Range"); cr != "" {
		// bytes a-b/total: Size is the whole file's.
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				fi.Size = n
			}
		}
	} else if resp.ContentLength >= 0 {
		fi.Size = resp.ContentLength
	} else if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil {
		fi.Size = n
	}
	return fi
}

// decodeJSON decodes a (small) JSON answer and closes the body.
func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("node %s: reading answer: %w", resp.Request.URL.Host, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("node %s: bad JSON answer: %w", resp.Request.URL.Host, err)
	}
	return nil
}

func newIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// bodyLen returns the length of in-memory readers, or -1.
func bodyLen(r io.Reader) int64 {
	switch b := r.(type) {
	case *bytes.Reader:
		return int64(b.Len())
	case *bytes.Buffer:
		return int64(b.Len())
	case *strings.Reader:
		return int64(b.Len())
	}
	return -1
}
