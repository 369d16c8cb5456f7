package filehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/socket"
)

// The front: the client port's listener, in front of net/http. It reads
// each request head itself and answers a plain whole-file GET or HEAD of a
// copy this node may serve itself (the file API's Open, the judgment every
// face uses: fences, read lease, pending, validity; and the caller's
// grant) with one write (a small cached file, with its headers), one
// writev (a larger cached one) or headers and sendfile (the head sent with
// MSG_MORE, so that it leaves with the file's first bytes; decision 0048)
// of a file of its own or of a small file's bytes inside its segment file
// (decision 0053), keeping the connection. Any other request, and every request
// after it on that connection, goes to net/http with the bytes already
// read: writes keep redirect-before-body and 100-continue, and ranges,
// conditions, errors and redirects are answered by the complete protocol.
// net/http's per-request cost (decision 0004) is what this saves on the
// reads that matter to throughput (docs/decisions/0018-front.md).

// FrontOptions tunes a Front.
type FrontOptions struct {
	// Allow says whether a request's Authorization header may read a key
	// (nil: every request may). A refused request goes to net/http, which
	// explains the 401 or 403.
	Allow func(authorization, key string) bool
	// Slots, when set, is the client API's admission control: a read the
	// front answers holds a slot, waiting for one as net/http's requests
	// do (internal/admission). A read admission refuses (no slot, no
	// waiting place, or the wait ran out) the front answers with the 503
	// net/http would send (the JSON envelope, Retry-After) and keeps the
	// connection: a refusal costs no net/http request, and the
	// connection's next reads are still the front's.
	Slots interface {
		Acquire(ctx context.Context) error
		Release()
	}
	// IdleTimeout closes a connection idle this long between requests;
	// HeaderTimeout bounds reading one request head.
	IdleTimeout, HeaderTimeout time.Duration
	// Prompt, when set, is called by each connection before it reads a
	// request, with the time: PromptListener.Prompt, so that the
	// connections a busy node is answering wake its accept loops
	// (prompt.go).
	Prompt func(now time.Time)
}

// Front is the listener net/http serves: it yields the connections the
// front hands over.
type Front struct {
	inner net.Listener
	h     *Handler
	o     FrontOptions
	open  func(ctx context.Context, key string) (*files.Reader, error)

	start    sync.Once
	handoff  chan net.Conn
	done     chan struct{}
	closeErr error
	stop     sync.Once

	mu    sync.Mutex
	conns map[net.Conn]*atomic.Int32 // held here, each with its connState
	shut  atomic.Bool

	served, refused atomic.Uint64
	heads           *headCache
}

// NewFront returns a front on ln answering plain reads for h; serve the
// returned listener with net/http (http.Server.Serve).
func (h *Handler) NewFront(ln net.Listener, o FrontOptions) *Front {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = 10 * time.Second
	}
	f := &Front{inner: ln, h: h, o: o, handoff: make(chan net.Conn), done: make(chan struct{}), conns: map[net.Conn]*atomic.Int32{}, heads: newHeadCache()}
	f.open = func(ctx context.Context, key string) (*files.Reader, error) {
		return h.svc.Open(ctx, key, files.OpenOptions{Probe: true})
	}
	return f
}

// Accept returns the next connection for net/http.
func (f *Front) Accept() (net.Conn, error) {
	f.start.Do(func() { go f.acceptLoop() })
	select {
	case c := <-f.handoff:
		return c, nil
	case <-f.done:
		return nil, f.closeErr
	}
}

// Close stops accepting and closes the connections idle in the front;
// a request being answered finishes first.
func (f *Front) Close() error {
	err := f.inner.Close()
	f.mu.Lock()
	f.shut.Store(true)
	for c, st := range f.conns {
		if st.CompareAndSwap(connIdle, connClosed) {
			c.Close()
		}
	}
	f.mu.Unlock()
	f.finish(net.ErrClosed)
	return err
}

// Addr is the listening address.
func (f *Front) Addr() net.Addr { return f.inner.Addr() }

// OpenConnections returns the connections the front holds (not yet handed
// to net/http).
func (f *Front) OpenConnections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// Served returns the requests the front answered itself.
func (f *Front) Served() uint64 { return f.served.Load() }

// Refused returns the reads the front refused itself (503, admission).
func (f *Front) Refused() uint64 { return f.refused.Load() }

func (f *Front) finish(err error) {
	f.stop.Do(func() {
		f.closeErr = err
		close(f.done)
	})
}

func (f *Front) acceptLoop() {
	for {
		c, err := f.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			f.finish(err)
			return
		}
		st := f.track(c)
		if st == nil {
			c.Close()
			continue
		}
		go f.serveConn(c, st)
	}
}

// A held connection's state: idle between requests (Close may close
// it), busy answering one, or closed by Close. Its goroutine moves it
// between idle and busy with atomics: the front's lock and map are
// touched once per connection, not twice per request.
const (
	connIdle int32 = iota
	connBusy
	connClosed
)

// track records c as held and idle; nil once the front is closed.
func (f *Front) track(c net.Conn) *atomic.Int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut.Load() {
		return nil
	}
	st := new(atomic.Int32) // connIdle
	f.conns[c] = st
	return st
}

// idle marks c idle after a request; false when the front is closing
// (the caller drops c). Close sets shut before it looks for idle
// connections, and this marks c idle before it looks at shut: one of
// the two sees the other.
func (f *Front) idle(st *atomic.Int32) bool {
	st.Store(connIdle)
	return !f.shut.Load()
}

func (f *Front) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

var frontReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxFrontHead) }}

// serveConn answers plain reads on c until the client closes, or a
// request the front does not answer hands c to net/http.
func (f *Front) serveConn(c net.Conn, st *atomic.Int32) {
	br := frontReaders.Get().(*bufio.Reader)
	br.Reset(c)
	defer func() {
		br.Reset(nil)
		frontReaders.Put(br)
	}()
	var idleSince time.Time // when the idle deadline was last set; zero: not set
	var memo headMemo
	var out memSender
	direct := false // br reads the socket itself
	for {
		// A deadline set is timer work: the idle one is moved only once an
		// eighth of it has passed, so a connection idles at least 7/8 of
		// IdleTimeout, at most all of it.
		now := time.Now()
		if f.o.Prompt != nil {
			f.o.Prompt(now)
		}
		if now.Sub(idleSince) > f.o.IdleTimeout/8 {
			_ = c.SetReadDeadline(now.Add(f.o.IdleTimeout))
			idleSince = now
		}
		if !direct && br.Buffered() == 0 {
			direct = f.readSocket(c, br)
		}
		if _, err := br.Peek(1); err != nil {
			f.drop(c)
			return
		}
		if !st.CompareAndSwap(connIdle, connBusy) { // Close closed it
			f.drop(c)
			return
		}
		h, verdict := f.readHead(c, br, &idleSince, &memo)
		switch verdict {
		case headIncomplete:
			f.drop(c) // the client went away or was too slow
			return
		case headHandOver:
			f.handOver(c, br)
			return
		}
		rd, refusal := f.judge(h)
		var err error
		switch {
		case refusal != nil:
			_, _ = br.Discard(h.n)
			f.refused.Add(1) // before the answer, which the client may see first
			err = f.refuse(c, h, refusal)
		case rd == nil:
			f.handOver(c, br)
			return
		default:
			_, _ = br.Discard(h.n)
			err = f.answer(c, h, rd, &memo, &out)
			if f.o.Slots != nil {
				f.o.Slots.Release()
			}
			if err == nil {
				f.served.Add(1)
			}
		}
		if err != nil || h.close {
			f.drop(c)
			return
		}
		if !f.idle(st) {
			f.drop(c)
			return
		}
	}
}

// readSocket makes br, empty, read c's socket itself (newSockReader) once
// c's wrappers hold nothing they read ahead (socket.ReadTCP); it reports
// whether it did.
func (f *Front) readSocket(c net.Conn, br *bufio.Reader) bool {
	tc := socket.ReadTCP(c)
	if tc == nil {
		return false
	}
	r := newSockReader(tc)
	if r == nil {
		return false
	}
	br.Reset(r)
	return true
}

// readHead reads until a whole head is buffered or judged not ours. The
// head usually comes in the read that ended the idle wait; only a head in
// pieces gets a deadline of its own (HeaderTimeout, as net/http's), which
// then clears *idleSince (the idle deadline is no longer set).
func (f *Front) readHead(c net.Conn, br *bufio.Reader, idleSince *time.Time, memo *headMemo) (frontHead, headVerdict) {
	for first := true; ; first = false {
		b, _ := br.Peek(br.Buffered())
		h, v := parseHeadMemo(b, memo)
		if v != headIncomplete {
			return h, v
		}
		if br.Buffered() >= maxFrontHead {
			return h, headHandOver
		}
		if first {
			_ = c.SetReadDeadline(time.Now().Add(f.o.HeaderTimeout))
			*idleSince = time.Time{}
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			if br.Buffered() > 0 && !errors.Is(err, io.EOF) && !isTimeout(err) {
				return h, headHandOver
			}
			return h, headIncomplete
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// judge opens the local copy h asks for, if this node may answer it here
// and the caller may read it, holding an admission slot (waited for as
// net/http's requests wait); nil otherwise. A refusal is admission's
// answer to an allowed read (the front answers it).
func (f *Front) judge(h frontHead) (rd *files.Reader, refusal error) {
	if f.h.svc != nil && f.h.svc.Explains() {
		return nil, nil
	}
	if f.o.Allow != nil && !f.o.Allow(h.auth, h.key) {
		return nil, nil
	}
	if f.o.Slots != nil {
		// No context a client's leaving cancels: one that leaves while
		// its read waits holds its waiting place until the wait runs out.
		if err := f.o.Slots.Acquire(context.Background()); err != nil {
			return nil, err
		}
	}
	rd, err := f.open(context.Background(), h.key)
	if err != nil {
		if f.o.Slots != nil {
			f.o.Slots.Release()
		}
		return nil, nil // held elsewhere, missing, pending, no lease: net/http says so
	}
	if f.h.svc != nil {
		f.h.svc.ReadAnswered(h.key)
	}
	return rd, nil
}

func (f *Front) drop(c net.Conn) {
	f.untrack(c)
	c.Close()
}

// handOver gives c to net/http, replaying what the front has read.
func (f *Front) handOver(c net.Conn, br *bufio.Reader) {
	f.untrack(c)
	_ = c.SetReadDeadline(time.Time{}) // net/http sets its own
	b, _ := br.Peek(br.Buffered())
	rc := &replayConn{Conn: c, pending: append([]byte(nil), b...)}
	select {
	case f.handoff <- rc:
	case <-f.done:
		c.Close()
	}
}

// replayConn is a connection whose first reads return bytes already read.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// ReadFrom keeps sendfile for what net/http writes.
func (c *replayConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// answer writes the response to h from rd, and closes rd; out sends what
// is in memory on a TCP connection.
func (f *Front) answer(c net.Conn, h frontHead, rd *files.Reader, memo *headMemo, out *memSender) error {
	data := rd.Bytes()
	size := rd.Length()
	buf := frontBufs.Get().(*[]byte)
	defer frontBufs.Put(buf)
	b := f.appendHead((*buf)[:0], rd, size, h.close)
	body := h.get
	tc := socket.TCP(c) // writev and MSG_MORE need the socket
	sf, off := rd.Section()
	if body && data != nil && len(data) <= frontCopyMax && (tc == nil || len(data) <= frontWritevMin) {
		b = append(b, data...) // one write: head and body
		body = false
	}
	*buf = b
	var err error
	switch {
	case tc != nil && !body:
		err = out.write(tc, b, nil)
	case tc != nil && data != nil:
		err = out.write(tc, b, data) // one writev: head and body, not copied
	case !body:
		_, err = c.Write(b)
	case data != nil:
		if _, err = c.Write(b); err == nil {
			_, err = c.Write(data)
		}
	case rd.File() != nil:
		if err = writeHeadMore(c, b); err == nil {
			_, err = sendFile(c, rd.File())
		}
	case sf != nil && tc != nil:
		err = sendFileAt(tc, b, sf, off, size)
	default:
		if _, err = c.Write(b); err == nil {
			_, err = io.Copy(c, rd) // checked as it is read
		}
	}
	if h.get {
		f.h.svc.Metrics().Sent(size)
	}
	if rd.Holding() {
		client := h.client
		if client == "" {
			client = memo.peer(c)
		}
		rd.ReadBy(client)
	}
	if cerr := rd.Close(); err == nil {
		err = cerr // a copy found corrupt: close before Content-Length bytes
	}
	return err
}

// frontCopyMax is the largest cached file sent in one write with its head
// (copied after it); a larger one goes in a write of its own.
const frontCopyMax = 64 << 10

// frontWritevMin: a cached file larger than this goes out in one writev
// with its head instead of being copied after the head first (on a TCP
// connection); below it the copy costs less than the kernel's walk of a
// second buffer.
const frontWritevMin = 16 << 10

var frontBufs = sync.Pool{New: func() any { b := make([]byte, 0, 65<<10); return &b }}

// plainHead formats the head of a whole-file answer of a file without
// attributes, the same as the main handler's (serve), cut around the Date
// value (headCache).
func (f *Front) plainHead(info files.Info, size int64) (pre, post []byte) {
	pre = append(pre, "HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\nContent-Length: "...)
	pre = strconv.AppendInt(pre, size, 10)
	pre = append(pre, "\r\nContent-Type: application/octet-stream\r\nDate: "...)
	post = append(post, "\r\nEtag: "...)
	post = append(post, info.ETag...)
	return pre, f.appendTail(post, info)
}

// appendTail appends the headers after the ETag, the same for every
// answer, without the head's final CRLF.
func (f *Front) appendTail(b []byte, info files.Info) []byte {
	b = append(b, "\r\nLast-Modified: "...)
	b = info.Modified.UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\nX-Mure-Node: "...)
	b = append(b, f.h.nodeHeader[0]...)
	b = append(b, "\r\nX-Mure-Sha256: "...)
	b = append(b, info.SHA256...)
	b = append(b, "\r\nX-Mure-Version: "...)
	return strconv.AppendUint(b, info.Version, 10)
}

// The Date header, formatted once a second.
var frontDate struct {
	mu   sync.Mutex
	sec  int64
	text []byte
}

func appendDate(b []byte) []byte {
	now := time.Now()
	frontDate.mu.Lock()
	if s := now.Unix(); s != frontDate.sec {
		frontDate.sec = s
		frontDate.text = now.UTC().AppendFormat(frontDate.text[:0], http.TimeFormat)
	}
	b = append(b, frontDate.text...)
	frontDate.mu.Unlock()
	return b
}

// sendFile copies f to c with sendfile. io.Copy would not: it prefers the
// file's WriteTo, which hands the connection a wrapper that the TCP
// connection's ReadFrom no longer recognises as a file.
func sendFile(c net.Conn, f *os.File) (int64, error) {
	if rf, ok := c.(io.ReaderFrom); ok {
		return rf.ReadFrom(f)
	}
	return io.Copy(c, f)
}
