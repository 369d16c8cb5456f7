package filehttp

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/mure-dev/mure/internal/files"
)

// The front's heads, kept: the head of a whole-file answer is the same for
// every read of one version but for its Date (and a Connection: close), so
// the front formats the rest (Content-Length, Etag, Last-Modified, the
// digests, the attributes) once per version and copies it after. An entry
// is found by the version's identity (files.Reader.Identity: path, version
// and blob, never the path alone): a new version of a path has a new
// version number, so an entry can never answer for another version.

// headCacheSize is the number of heads kept (a power of two); a version
// whose slot another took is formatted again.
const headCacheSize = 1024

// cachedHead is the head of a whole-file answer of one version, cut
// around the Date value: pre ends with "Date: ", post runs from the CRLF
// after the date to the end of the last header, without its CRLF.
type cachedHead struct {
	path    string
	version uint64
	blob    string
	size    int64
	pre     []byte
	post    []byte
}

// headCache holds cachedHeads in slots chosen by the identity's hash;
// entries are never modified once stored, so readers need no lock.
type headCache struct {
	seed  maphash.Seed
	slots [headCacheSize]atomic.Pointer[cachedHead]
}

func newHeadCache() *headCache { return &headCache{seed: maphash.MakeSeed()} }

func (hc *headCache) slot(path string, version uint64) *atomic.Pointer[cachedHead] {
	h := maphash.String(hc.seed, path) ^ version*0x9e3779b97f4a7c15
	return &hc.slots[h&(headCacheSize-1)]
}

// appendHead appends the head of a whole-file answer of rd (size bytes)
// to b, from the cache when it holds rd's version.
func (f *Front) appendHead(b []byte, rd *files.Reader, size int64, closing bool) []byte {
	path, version, blob := rd.Identity()
	s := f.heads.slot(path, version)
	e := s.Load()
	if e == nil || e.version != version || e.size != size || e.blob != blob || e.path != path {
		e = f.formatHead(path, version, blob, rd.Info(), size)
		s.Store(e)
	}
	b = append(b, e.pre...)
	b = appendDate(b)
	b = append(b, e.post...)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	return append(b, "\r\n\r\n"...)
}

// formatHead formats the head of a whole-file answer of info, cut around
// the Date value.
func (f *Front) formatHead(path string, version uint64, blob string, info files.Info, size int64) *cachedHead {
	e := &cachedHead{path: path, version: version, blob: blob, size: size}
	if hasAttrs(&info) {
		e.pre, e.post = f.attrHead(info, size)
	} else {
		e.pre, e.post = f.plainHead(info, size)
	}
	return e
}
