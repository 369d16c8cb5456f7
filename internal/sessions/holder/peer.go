package holder

import (
	"encoding/json"
	"net"
	"time"

	"github.com/creack/pty"
)

// queueBytes bounds the output waiting for one client (beside its
// socket's buffer, peerSockBuf): beyond it, the client gets a fresh
// screen instead of the output it missed. A variable for the tests.
var queueBytes = 256 << 10

// queueFrames bounds the frames waiting for one client.
const queueFrames = 1024

// peerSockBuf is the kernel's send buffer per client socket: with
// queueBytes, what a client that does not read can hold of the holder's
// memory.
const peerSockBuf = 64 << 10

// peer is one connection to the holder.
type peer struct {
	conn    net.Conn
	size    Size
	out     chan []byte
	wake    chan struct{}
	behind  bool          // guarded by holder.mu: output was dropped
	bytes   int           // guarded by holder.mu: bytes queued in out
	done    chan struct{} // closed when the connection's reader ends
	flushed chan struct{} // closed when the writer has returned
}

func frame(typ byte, payload []byte) []byte {
	f := make([]byte, 5+len(payload))
	f[0] = typ
	f[1], f[2], f[3], f[4] = byte(len(payload)>>24), byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	copy(f[5:], payload)
	return f
}

func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// queue adds a frame for the client without waiting (holder.mu held).
func (p *peer) queue(f []byte) {
	if p.behind {
		return
	}
	if p.bytes+len(f) > queueBytes && len(p.out) > 0 {
		p.behind = true
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return
	}
	select {
	case p.out <- f:
		p.bytes += len(f)
	default:
		p.behind = true
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

func (h *holder) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go h.serve(c)
	}
}

// serve runs one connection: the hello, then its requests.
func (h *holder) serve(c net.Conn) {
	p := &peer{conn: c, out: make(chan []byte, queueFrames), wake: make(chan struct{}, 1),
		done: make(chan struct{}), flushed: make(chan struct{})}
	defer c.Close()
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.SetWriteBuffer(peerSockBuf)
	}
	go h.write(p)
	defer close(p.done)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, body, err := readFrame(c)
	if err != nil || typ != FrameHello || len(body) != 5 {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if body[0] == ModeAttach {
		sz, _ := parseSize(body[1:])
		h.attach(p, sz)
		defer h.detach(p)
	}
	for {
		typ, body, err := readFrame(c)
		if err != nil {
			return
		}
		switch typ {
		case FrameInput:
			h.mu.Lock()
			h.lastIn = time.Now()
			h.mu.Unlock()
			if _, err := h.ptmx.Write(body); err != nil {
				return
			}
		case FrameResize:
			if sz, err := parseSize(body); err == nil {
				h.mu.Lock()
				if sz, ok := sz.Clamp(); ok {
					p.size = sz
					h.resizeLocked()
				}
				h.mu.Unlock()
			}
		case FrameStatus:
			p.out <- frame(FrameStatus, marshal(h.status()))
		case FrameNotice:
			h.notice(string(body))
		case FrameKill:
			h.kill(string(body))
		}
	}
}

// write sends a connection's frames; a fresh screen when it fell behind.
func (h *holder) write(p *peer) {
	defer close(p.flushed)
	for {
		h.mu.Lock()
		var f []byte
		if p.behind {
			for len(p.out) > 0 {
				<-p.out
			}
			p.behind, p.bytes = false, 0
			snap := h.scr.snapshotLocked(h.size)
			h.mu.Unlock()
			for _, f := range snap {
				if _, err := p.conn.Write(f); err != nil {
					return
				}
			}
			continue
		}
		h.mu.Unlock()
		if f == nil {
			select {
			case f = <-p.out:
				h.mu.Lock()
				p.bytes -= len(f)
				h.mu.Unlock()
			case <-p.wake:
				continue
			case <-p.done:
				return
			}
		}
		if _, err := p.conn.Write(f); err != nil {
			return
		}
		if f[0] == FrameExit {
			return
		}
	}
}

// attach makes p a terminal client: the screen now, then the output.
func (h *holder) attach(p *peer, sz Size) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := sz.Clamp(); ok {
		p.size = c
	} else {
		p.size = h.size
	}
	h.peers[p] = struct{}{}
	h.nattach.Add(1)
	h.resizeLocked()
	for _, f := range h.scr.snapshotLocked(h.size) { // bounded by maxLag
		p.out <- f
		p.bytes += len(f)
	}
	select {
	case <-h.ended:
		p.queue(frame(FrameExit, marshal(h.exit)))
	default:
	}
}

func (h *holder) detach(p *peer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.peers, p)
	h.nattach.Add(-1)
	h.resizeLocked()
}

// resizeLocked gives the PTY the smallest size of the attached clients.
func (h *holder) resizeLocked() {
	var sz Size
	for p := range h.peers {
		if sz.Cols == 0 || p.size.Cols < sz.Cols {
			sz.Cols = p.size.Cols
		}
		if sz.Rows == 0 || p.size.Rows < sz.Rows {
			sz.Rows = p.size.Rows
		}
	}
	if sz.Cols == 0 || sz == h.size {
		return
	}
	h.size = sz
	_ = pty.Setsize(h.ptmx, &pty.Winsize{Cols: sz.Cols, Rows: sz.Rows})
	h.scr.resizeLocked(sz)
}

// notice sends a message to the attached clients (not to the screen).
func (h *holder) notice(text string) {
	f := frame(FrameNotice, []byte(text))
	h.mu.Lock()
	defer h.mu.Unlock()
	for p := range h.peers {
		p.queue(f)
	}
}
