package s3

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// body is a request body decoded (aws-chunked) and verified as it streams:
// the signed SHA-256, Content-MD5, x-amz-checksum-* (in a header or a
// trailer) and the chunk signatures. A mismatch fails the read that would
// have returned io.EOF, so the file API aborts the write and nothing
// becomes visible; failed keeps the S3 error for the answer.
type body struct {
	src    io.Reader
	checks []check
	failed *Error
	done   bool
	// trailer receives the checksums of an aws-chunked trailer.
	trailer *chunked
}

// check is one digest to compare at the end of the body.
type check struct {
	h    hash.Hash
	want []byte // nil: the value comes from the trailer (name)
	name string // x-amz-checksum-* for a trailer's value
	code string
	what string
}

func (b *body) Read(p []byte) (int, error) {
	if b.failed != nil {
		return 0, b.failed
	}
	n, err := b.src.Read(p)
	for _, c := range b.checks {
		c.h.Write(p[:n])
	}
	if err == io.EOF && !b.done {
		b.done = true
		if e := b.verify(); e != nil {
			b.failed = e
			return n, e
		}
	}
	if err != nil && err != io.EOF {
		if e, ok := err.(*Error); ok {
			b.failed = e
		}
	}
	return n, err
}

func (b *body) verify() *Error {
	for _, c := range b.checks {
		want := c.want
		if want == nil && b.trailer != nil {
			v, ok := b.trailer.trailers[c.name]
			if !ok {
				return errorf(http.StatusBadRequest, CodeInvalidRequest, "the trailer announced by x-amz-trailer (%s) did not arrive", c.name)
			}
			var err error
			if want, err = base64.StdEncoding.DecodeString(v); err != nil {
				return errorf(http.StatusBadRequest, CodeInvalidDigest, "%s %q is not base64", c.name, v)
			}
		}
		if !bytes.Equal(c.h.Sum(nil), want) {
			return errorf(http.StatusBadRequest, c.code, "The %s you specified did not match what we received; nothing was stored.", c.what)
		}
	}
	return nil
}

// newBody prepares r's body for the file API: decoded when aws-chunked,
// with every digest the client sent to verify. size is the decoded
// length (-1: unknown).
func newBody(r *http.Request, s *signed) (b *body, size int64, err error) {
	b = &body{src: r.Body}
	size = r.ContentLength
	payload := unsignedPayload
	if s != nil {
		payload = s.payload
	}
	switch payload {
	case streamingSigned, streamingUnsignedTrail:
		ch := &chunked{r: bufio.NewReaderSize(r.Body, 64<<10), trailer: payload == streamingUnsignedTrail}
		if payload == streamingSigned && s.key != nil { // nil: not checked (--auth=false)
			ch.sig = s
			ch.prev = s.seed
		}
		b.src, b.trailer = ch, ch
		size = -1
		if d := r.Header.Get("X-Amz-Decoded-Content-Length"); d != "" {
			if size, err = strconv.ParseInt(d, 10, 64); err != nil || size < 0 {
				return nil, 0, errorf(http.StatusBadRequest, CodeInvalidArgument, "x-amz-decoded-content-length %q is not a length", d)
			}
		}
	case unsignedPayload:
	default:
		want, _ := hex.DecodeString(payload)
		b.checks = append(b.checks, check{h: sha256.New(), want: want, code: CodeSHA256Mismatch, what: "x-amz-content-sha256"})
	}
	if m := r.Header.Get("Content-MD5"); m != "" {
		want, err := base64.StdEncoding.DecodeString(m)
		if err != nil || len(want) != md5.Size {
			return nil, 0, errorf(http.StatusBadRequest, CodeInvalidDigest, "Content-MD5 %q is not the base64 of 16 bytes", m)
		}
		b.checks = append(b.checks, check{h: md5.New(), want: want, code: CodeBadDigest, what: "Content-MD5"})
	}
	for name, mk := range checksums {
		v := r.Header.Get(name)
		inTrailer := b.trailer != nil && strings.Contains(strings.ToLower(r.Header.Get("X-Amz-Trailer")), name)
		if v == "" && !inTrailer {
			continue
		}
		c := check{h: mk(), name: name, code: CodeBadDigest, what: name}
		if v != "" {
			if c.want, err = base64.StdEncoding.DecodeString(v); err != nil {
				return nil, 0, errorf(http.StatusBadRequest, CodeInvalidDigest, "%s %q is not base64", name, v)
			}
		}
		b.checks = append(b.checks, c)
	}
	if t := strings.ToLower(r.Header.Get("X-Amz-Trailer")); t != "" {
		if _, ok := checksums[t]; !ok {
			return nil, 0, errorf(http.StatusBadRequest, CodeInvalidRequest, "x-amz-trailer %q: the checksums verified are %s", t, checksumNames())
		}
	}
	return b, size, nil
}

// checksums are the x-amz-checksum-* algorithms verified.
var checksums = map[string]func() hash.Hash{
	"x-amz-checksum-crc32":  func() hash.Hash { return crc32.NewIEEE() },
	"x-amz-checksum-crc32c": func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"x-amz-checksum-sha1":   sha1.New,
	"x-amz-checksum-sha256": sha256.New,
}

func checksumNames() string {
	return "x-amz-checksum-crc32, -crc32c, -sha1 and -sha256"
}

// chunked decodes an aws-chunked body: "SIZE[;chunk-signature=SIG]\r\n
// DATA\r\n" until a zero-size chunk, then trailer lines. With sig set,
// each chunk's signature is checked, chained from the seed signature.
type chunked struct {
	r        *bufio.Reader
	sig      *signed
	prev     string
	trailer  bool
	left     int64 // bytes left in the current chunk
	cur      hash.Hash
	curSig   string
	eof      bool
	trailers map[string]string
}

var emptySHA256 = hex.EncodeToString(sha256.New().Sum(nil))

func (c *chunked) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.eof {
			return 0, io.EOF
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.cur != nil {
		c.cur.Write(p[:n])
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && c.left == 0 {
		err = c.endChunk()
	}
	return n, err
}

func malformedChunk(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, CodeIncompleteBody, "aws-chunked body: "+format, args...)
}

// next reads a chunk header (and, at the last chunk, the trailer).
func (c *chunked) next() error {
	line, err := c.line()
	if err != nil {
		return err
	}
	sizeHex, ext, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 {
		return malformedChunk("chunk size %q is not hexadecimal", sizeHex)
	}
	if c.sig != nil {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok {
			return malformedChunk("chunk without chunk-signature")
		}
		c.curSig, c.cur = sig, sha256.New()
	}
	c.left = size
	if size > 0 {
		return nil
	}
	c.eof = true
	if err := c.endChunk(); err != nil {
		return err
	}
	return c.readTrailer()
}

// endChunk checks the finished chunk's signature and reads its CRLF.
func (c *chunked) endChunk() error {
	if c.sig != nil {
		sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.sig.date + "\n" + c.sig.scope + "\n" + c.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.cur.Sum(nil))
		want := hex.EncodeToString(hmacSHA256(c.sig.key, sts))
		if want != c.curSig {
			return errorf(http.StatusForbidden, CodeSignatureDoesNotMatch, "a chunk's signature does not match; nothing was stored")
		}
		c.prev = want
	}
	if c.eof {
		return nil
	}
	if l, err := c.line(); err != nil || l != "" {
		return malformedChunk("a chunk does not end with CRLF")
	}
	return nil
}

func (c *chunked) readTrailer() error {
	c.trailers = map[string]string{}
	for {
		l, err := c.line()
		if err == io.ErrUnexpectedEOF && !c.trailer {
			return nil
		}
		if err != nil {
			return err
		}
		if l == "" {
			return nil
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return malformedChunk("trailer line %q is not NAME:VALUE", l)
		}
		c.trailers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
}

func (c *chunked) line() (string, error) {
	l, err := c.r.ReadString('\n')
	if err != nil {
		if err == io.EOF {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	if len(l) > 4096 {
		return "", malformedChunk("line over 4096 bytes")
	}
	return strings.TrimRight(l, "\r\n"), nil
}
