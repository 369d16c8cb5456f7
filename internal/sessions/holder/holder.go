package holder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// killGrace is how long a killed session's processes have after SIGHUP
// before SIGKILL.
const killGrace = 2 * time.Second

// SecretEnv carries, in the holder's environment, one NAME=VALUE the
// program gets in its own (the session's credential): see Spawn.
const SecretEnv = "MURE_HOLDER_SECRET"

// holder is one running session: its program, PTY, screen and clients.
type holder struct {
	dir  string
	spec Spec
	log  *slog.Logger
	ptmx *os.File
	cmd  *exec.Cmd

	mu       sync.Mutex
	size     Size
	peers    map[*peer]struct{} // attached clients
	lastIn   time.Time
	lastOut  time.Time
	started  time.Time
	nattach  atomic.Int32
	activity *activity

	// The screen: the emulator takes the output behind the clients, at
	// its own pace (screen.go).
	scr screen

	killOnce sync.Once
	ended    chan struct{} // closed when the program has exited
	exit     Exit
}

// Run is the holder process's main: it runs the session described by
// DIR/spec.json and returns when the session has ended (its program
// exited, or a kill). The node starts it as `mure session-holder DIR`.
func Run(ctx context.Context, dir string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("part", "session-holder", "dir", dir)
	spec, err := readSpec(dir)
	if err != nil {
		writeExit(dir, Exit{Code: -1, Error: err.Error(), At: time.Now()})
		return err
	}
	log = log.With("session", spec.ID)
	if sec := os.Getenv(SecretEnv); sec != "" {
		spec.Env = append(spec.Env, sec)
		_ = os.Unsetenv(SecretEnv)
	}
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	h := &holder{dir: dir, spec: spec, log: log, size: spec.Size, peers: map[*peer]struct{}{}, ended: make(chan struct{})}
	if err := h.start(); err != nil {
		writeExit(dir, Exit{Code: -1, Error: err.Error(), At: time.Now()})
		return err
	}
	// The socket opens once the program runs: a node that reaches it knows
	// the session started.
	sock := filepath.Join(dir, SockFile)
	_ = os.Remove(sock)
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", sock)
	syscall.Umask(old)
	if err != nil {
		signalSession(h.cmd.Process.Pid, syscall.SIGKILL)
		writeExit(dir, Exit{Code: -1, Error: err.Error(), At: time.Now()})
		return fmt.Errorf("holder: listen: %w", err)
	}
	defer ln.Close()
	pumped := make(chan struct{})
	go func() { defer close(pumped); h.pump() }()
	go h.replies()
	go h.scr.run(h.ended)
	go h.accept(ln)
	stopSample := make(chan struct{})
	go h.sample(stopSample)
	go func() {
		select {
		case <-ctx.Done():
			h.kill("the holder was stopped")
		case <-h.ended:
		}
	}()

	werr := h.cmd.Wait()
	select { // the last output, until the PTY reports that no one holds it
	case <-pumped:
	case <-time.After(time.Second):
	}
	close(stopSample)
	h.finish(werr)
	return nil
}

// start starts the program under a PTY as the session's account, inside
// its cgroups (enter.go).
func (h *holder) start() error {
	s := h.spec
	path, err := exec.LookPath(s.Argv[0])
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	cmd, attrs, started, err := startCmd(s, path)
	if err != nil {
		return err
	}
	h.cmd = cmd
	h.scr.init(&h.mu, int(s.Size.Cols), int(s.Size.Rows), s.Scrollback)
	ptmx, err := pty.StartWithAttrs(h.cmd, &pty.Winsize{Cols: s.Size.Cols, Rows: s.Size.Rows}, attrs)
	started()
	if err != nil {
		return fmt.Errorf("start %s as uid %d: %w", s.Argv[0], s.UID, err)
	}
	h.ptmx = ptmx
	now := time.Now()
	h.started, h.lastIn, h.lastOut = now, now, now
	h.activity = newActivity(h.cmd.Process.Pid)
	return nil
}

// pump copies the program's output into the screen and to the clients.
func (h *holder) pump() {
	buf := make([]byte, 32<<10)
	for {
		n, err := h.ptmx.Read(buf)
		if n > 0 {
			f := frame(FrameOutput, buf[:n])
			h.mu.Lock()
			h.scr.appendLocked(buf[:n]) // waits while the screen lags too far
			h.lastOut = time.Now()
			for p := range h.peers {
				p.queue(f)
			}
			h.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// replies forwards what the emulator answers to the program's queries
// (cursor position, device attributes) while no client is attached; an
// attached client's own terminal answers then.
func (h *holder) replies() {
	buf := make([]byte, 4096)
	for {
		n, err := h.scr.term.Read(buf)
		if n > 0 && h.nattach.Load() == 0 {
			_, _ = h.ptmx.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// kill ends the session: SIGHUP to its processes, SIGKILL after killGrace.
func (h *holder) kill(why string) {
	h.killOnce.Do(func() {
		h.log.Info("ending the session", "why", why)
		h.mu.Lock()
		h.exit.Error = why
		h.mu.Unlock()
		pid := h.cmd.Process.Pid
		signalSession(pid, syscall.SIGHUP)
		go func() {
			select {
			case <-h.ended:
			case <-time.After(killGrace):
			}
			signalSession(pid, syscall.SIGKILL)
		}()
	})
}

// finish records how the session ended and tells the clients.
func (h *holder) finish(werr error) {
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
	case werr != nil:
		code = -1
	}
	h.mu.Lock()
	h.exit.Code, h.exit.At = code, time.Now()
	e := h.exit
	close(h.ended)
	writeExit(h.dir, e)
	f := frame(FrameExit, marshal(e))
	peers := make([]*peer, 0, len(h.peers))
	for p := range h.peers {
		p.queue(f)
		peers = append(peers, p)
	}
	h.mu.Unlock()
	// Whatever survived the program (it left the process group) goes too.
	signalSession(h.cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.After(time.Second)
	for _, p := range peers {
		select {
		case <-p.flushed:
		case <-deadline:
		}
	}
	_ = h.ptmx.Close()
	// Ends replies; Emulator.Close would race with its Read.
	if c, ok := h.scr.term.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	h.log.Info("session ended", "code", e.Code, "error", e.Error)
}
