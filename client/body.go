package client

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

var errStaleBody = errors.New("mure: request body read by an abandoned attempt")

// errCannotResend: a redirect or retry needs the body again, and it was
// partly consumed and cannot be rewound.
var errCannotResend = errors.New("body could not be re-sent (partly consumed and not seekable)")

// body is the request body shared by the attempts of one call. Each send gets
// its own sendBody; only the latest one may read, and only if nobody else
// consumed bytes meanwhile, so an abandoned transport goroutine can never
// steal bytes from a new attempt. Reads hold mu; n and gen are atomics so
// that starting an attempt never waits for a blocked read (e.g. of a pipe).
type body struct {
	mu     sync.Mutex // serializes reads and seeks
	r      io.Reader
	seeker io.Seeker // nil when not rewindable
	start  int64
	n      atomic.Int64 // bytes consumed since the last rewind
	gen    atomic.Int64
}

func newBody(r io.Reader) *body {
	b := &body{r: r}
	if s, ok := r.(io.Seeker); ok {
		// os.Stdin is an io.Seeker whose Seek fails on pipes.
		if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
			b.seeker, b.start = s, pos
		}
	}
	return b
}

// rewind prepares the body to be sent again from its start.
func (b *body) rewind() error {
	if b.n.Load() == 0 {
		return nil
	}
	if b.seeker == nil {
		return fmt.Errorf("%w: %d bytes already sent", errCannotResend, b.n.Load())
	}
	b.gen.Add(1) // retire readers before seeking
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %w", errCannotResend, err)
	}
	b.n.Store(0)
	return nil
}

// send returns the reader for a new attempt; it ignores Close.
func (b *body) send() *sendBody { return &sendBody{b: b, gen: b.gen.Add(1)} }

type sendBody struct {
	b   *body
	gen int64
	own int64 // bytes read through this sendBody
}

func (s *sendBody) Read(p []byte) (int, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen.Load() != s.gen || b.n.Load() != s.own {
		return 0, errStaleBody
	}
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	s.own += int64(n)
	return n, err
}

func (s *sendBody) Close() error { return nil }
