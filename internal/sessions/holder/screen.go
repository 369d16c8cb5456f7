package holder

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/x/vt"
)

// The emulator (vt) is far slower than a PTY with output that scrolls, so
// it does not stand between the program and its clients: the clients get
// the output as it comes, and the emulator applies it behind them, from a
// log of what it has not applied yet. A snapshot for a new client is the
// screen as the emulator has it plus that log's rest, so that the client
// ends where the live stream goes on. The log is bounded (maxLag): a
// program that outruns the emulator by more waits, as it would on a slow
// terminal.
const (
	maxLag    = 4 << 20
	emuChunk  = 4 << 10 // applied at once: a snapshot waits for at most one
	logShrink = 4 * maxLag
)

// screen is a session's terminal state. Lock order: holder.mu, then
// screen.termMu.
type screen struct {
	mu *sync.Mutex // the holder's: guards log, base, lagged

	log    []byte // output from offset base on, not yet all applied
	base   int64
	lagged *sync.Cond

	termMu  sync.Mutex // guards term
	term    *vt.Emulator
	applied atomic.Int64 // offset the emulator has applied (set under termMu)
	wake    chan struct{}
}

func (s *screen) init(mu *sync.Mutex, cols, rows, scrollback int) {
	s.mu = mu
	s.lagged = sync.NewCond(mu)
	s.term = vt.NewEmulator(cols, rows)
	s.term.SetScrollbackSize(scrollback)
	s.wake = make(chan struct{}, 1)
}

// appendLocked adds output (holder.mu held); it waits while the emulator
// lags by more than maxLag.
func (s *screen) appendLocked(p []byte) {
	for s.base+int64(len(s.log))-s.applied.Load() > maxLag {
		s.lagged.Wait()
	}
	s.log = append(s.log, p...)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run applies the log to the emulator until done closes.
func (s *screen) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-s.wake:
		}
		for s.step() {
		}
	}
}

// step applies one chunk of the log; false when there was none.
func (s *screen) step() bool {
	s.mu.Lock()
	start := s.applied.Load() - s.base
	chunk := bytes.Clone(s.log[start:min(int64(len(s.log)), start+emuChunk)])
	s.mu.Unlock()
	if len(chunk) == 0 {
		return false
	}
	s.termMu.Lock()
	_, _ = s.term.Write(chunk)
	s.applied.Add(int64(len(chunk)))
	s.termMu.Unlock()

	s.mu.Lock()
	cut := s.applied.Load() - s.base
	s.log = s.log[cut:]
	s.base += cut
	if cap(s.log) > logShrink {
		s.log = bytes.Clone(s.log)
	}
	s.lagged.Broadcast()
	s.mu.Unlock()
	return true
}

// resizeLocked resizes the emulator (holder.mu held).
func (s *screen) resizeLocked(sz Size) {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	s.term.Resize(int(sz.Cols), int(sz.Rows))
}

// tailFrame bounds one frame of a snapshot's tail.
const tailFrame = 64 << 10

// snapshotLocked returns the frames that bring a new client to where the
// live stream goes on (holder.mu held): the screen, then the output the
// emulator has not applied yet (at most maxLag, in frames of tailFrame).
func (s *screen) snapshotLocked(size Size) [][]byte {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	frames := [][]byte{frame(FrameScreen, s.renderLocked(size))}
	for tail := s.log[s.applied.Load()-s.base:]; len(tail) > 0; {
		n := min(len(tail), tailFrame)
		frames = append(frames, frame(FrameOutput, tail[:n]))
		tail = tail[n:]
	}
	return frames
}

// renderLocked renders the screen (termMu held): clear, each line in
// place with its styles, then the cursor.
func (s *screen) renderLocked(size Size) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	for y, line := range strings.Split(s.term.Render(), "\n") {
		if y >= int(size.Rows) {
			break
		}
		if line != "" {
			fmt.Fprintf(&b, "\x1b[%d;1H%s\x1b[0m", y+1, line)
		}
	}
	pos := s.term.CursorPosition()
	fmt.Fprintf(&b, "\x1b[%d;%dH", pos.Y+1, pos.X+1)
	if s.term.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return b.Bytes()
}
