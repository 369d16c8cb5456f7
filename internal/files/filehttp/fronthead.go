package filehttp

import (
	"bytes"
	"net"
	"net/url"

	"github.com/mure-dev/mure/internal/files"
)

// The front's request-head parser. It recognises one narrow shape, a plain
// HTTP/1.1 GET or HEAD of /files/KEY with a few harmless headers, and
// says "hand over" for everything else, however valid: net/http then
// answers it with the complete protocol. Being strict costs nothing but
// the fast path; being lenient could answer a request net/http would have
// read differently (a body, a second Host, an obs-folded line).

// maxFrontHead is the largest request head the front parses itself.
const maxFrontHead = 4096

// maxFrontHeaders bounds the header lines of a head the front answers.
const maxFrontHeaders = 32

// headVerdict is what parseHead found.
type headVerdict int

const (
	headIncomplete headVerdict = iota // need more bytes
	headServe                         // a plain read the front may answer
	headHandOver                      // anything else: net/http answers
)

// frontHead is a parsed plain read.
type frontHead struct {
	get    bool   // GET, else HEAD
	key    string // the file key, unescaped and valid
	auth   string // the Authorization value, "" without
	client string // X-Mure-Client, "" without
	close  bool   // Connection: close
	n      int    // bytes of the head, final CRLF CRLF included
}

// headMemo keeps, for one connection, the strings its last request
// parsed into: a client sends the same credential on every request of a
// connection, and often the same path, and the front then reuses them
// instead of allocating and checking them again.
type headMemo struct {
	target, key string // the request target's raw bytes and its key
	auth        string
	host        string // the client's address without its port, once asked
}

// peer returns the host of c's remote address, the reader a holder counts
// (files.Reader.ReadBy) when the request names no client.
func (m *headMemo) peer(c net.Conn) string {
	if m.host == "" {
		m.host, _, _ = net.SplitHostPort(c.RemoteAddr().String())
	}
	return m.host
}

// parseHead parses the request head at the start of b.
func parseHead(b []byte) (frontHead, headVerdict) { return parseHeadMemo(b, nil) }

// parseHeadMemo is parseHead reusing (and updating) m's strings when the
// head repeats them; m may be nil.
func parseHeadMemo(b []byte, m *headMemo) (frontHead, headVerdict) {
	var h frontHead
	end := bytes.Index(b, []byte("\r\n\r\n"))
	scan := b
	if end >= 0 {
		scan = b[:end+2]
	}
	// A bare LF (or CR) anywhere in the head: not ours.
	for i, c := range scan {
		if c == '\n' && (i == 0 || scan[i-1] != '\r') || c == '\r' && i+1 < len(scan) && scan[i+1] != '\n' {
			return h, headHandOver
		}
	}
	if end < 0 {
		if len(b) >= maxFrontHead {
			return h, headHandOver
		}
		return h, headIncomplete
	}
	h.n = end + 4
	if h.n > maxFrontHead {
		return h, headHandOver
	}
	first, rest, _ := bytes.Cut(b[:end], []byte("\r\n"))
	if !h.requestLine(first, m) {
		return h, headHandOver
	}
	hosts, auths, conns := 0, 0, 0
	for n := 0; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		if n == maxFrontHeaders {
			return h, headHandOver
		}
		name, value, ok := headerLine(line)
		if !ok {
			return h, headHandOver
		}
		switch headerName(name) {
		case "host":
			hosts++
			if !validHost(value) {
				return h, headHandOver
			}
		case "authorization":
			auths++
			switch {
			case m == nil:
				h.auth = string(value)
			case string(value) == m.auth: // no allocation
				h.auth = m.auth
			default:
				h.auth = string(value)
				m.auth = h.auth
			}
		case "connection":
			conns++
			switch {
			case bytes.EqualFold(value, []byte("close")):
				h.close = true
			case bytes.EqualFold(value, []byte("keep-alive")):
			default:
				return h, headHandOver // upgrade and friends
			}
		case "x-mure-client":
			h.client = string(value)
		case "harmless":
			// The answer is the same with or without them.
		default:
			return h, headHandOver // a body, a range, a condition, Expect, ...
		}
	}
	if hosts != 1 || auths > 1 || conns > 1 {
		return h, headHandOver
	}
	return h, headServe
}

// requestLine parses "GET /files/KEY HTTP/1.1" (or HEAD) into h.
func (h *frontHead) requestLine(line []byte, m *headMemo) bool {
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		h.get, line = true, line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		line = line[5:]
	default:
		return false
	}
	target, ok := bytes.CutSuffix(line, []byte(" HTTP/1.1"))
	if !ok || !bytes.HasPrefix(target, []byte(FilesPrefix)) {
		return false
	}
	raw := target[len(FilesPrefix):]
	if m != nil && m.key != "" && string(raw) == m.target {
		h.key = m.key // checked when it was first read
		return true
	}
	for _, c := range raw {
		if !pathByte(c) {
			return false // a query, a fragment, a space, a control byte, non-ASCII
		}
	}
	key, err := url.PathUnescape(string(raw))
	if err != nil || files.ValidatePath(key) != nil {
		return false // the main handler explains the bad path
	}
	h.key = key
	if m != nil {
		m.target, m.key = string(raw), key
	}
	return true
}

// pathByte reports whether c may appear in a path segment (RFC 3986 pchar,
// with '/' and percent-escapes), the characters net/http takes as they are.
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/%"), c) >= 0
}

// headerLine splits "Name: value", refusing whitespace before the colon,
// obs-fold, empty names, non-token names and control bytes in values.
func headerLine(line []byte) (name, value []byte, ok bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return nil, nil, false
	}
	name = line[:i]
	for _, c := range name {
		if !tokenByte(c) {
			return nil, nil, false
		}
	}
	value = bytes.Trim(line[i+1:], " \t")
	for _, c := range value {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return nil, nil, false
		}
	}
	return name, value, true
}

// tokenByte reports whether c is an RFC 9110 tchar.
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// validHost accepts host[:port] made of letters, digits, '.', '-', ':',
// '[' and ']' (IPv6), nothing else.
func validHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return true
}

// frontHeaders are the header names the front reads; harmlessHeaders
// those that cannot change its answer.
var (
	frontHeaders    = []string{"host", "authorization", "connection", "x-mure-client"}
	harmlessHeaders = []string{"user-agent", "accept", "accept-encoding", "accept-language", "x-mure-forward", "referer", "cache-control", "pragma"}
)

// headerName returns name in lower case when it is one of frontHeaders,
// "harmless" for one of harmlessHeaders, "" otherwise (no allocation).
func headerName(name []byte) string {
	for _, n := range frontHeaders {
		if len(n) == len(name) && bytes.EqualFold(name, []byte(n)) {
			return n
		}
	}
	for _, n := range harmlessHeaders {
		if len(n) == len(name) && bytes.EqualFold(name, []byte(n)) {
			return "harmless"
		}
	}
	return ""
}
