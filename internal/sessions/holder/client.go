package holder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ErrGone: the holder is not running (its session ended, or it died).
var ErrGone = errors.New("holder: not running")

// Conn is a connection to a holder: attached (a terminal client) or a
// control channel.
type Conn struct {
	c   net.Conn
	wmu sync.Mutex
}

func dial(ctx context.Context, dir string, mode byte, sz Size) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(dir, SockFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	conn := &Conn{c: c}
	if err := conn.send(FrameHello, append([]byte{mode}, sz.bytes()...)); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	return conn, nil
}

// Attach connects to the holder in dir as a terminal client of size sz:
// the first frame it reads is the screen.
func Attach(ctx context.Context, dir string, sz Size) (*Conn, error) {
	return dial(ctx, dir, ModeAttach, sz)
}

// Control connects to the holder in dir for Status, Notice and Kill.
func Control(ctx context.Context, dir string) (*Conn, error) {
	return dial(ctx, dir, ModeControl, Size{})
}

func (c *Conn) send(typ byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.c, typ, p)
}

// Input sends keystrokes to the program.
func (c *Conn) Input(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), MaxFrame)
		if err := c.send(FrameInput, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Resize reports this client's terminal size.
func (c *Conn) Resize(sz Size) error { return c.send(FrameResize, sz.bytes()) }

// Notice shows text to the attached clients (not on the screen).
func (c *Conn) Notice(text string) error { return c.send(FrameNotice, []byte(text)) }

// Kill ends the session; why is recorded in its exit.
func (c *Conn) Kill(why string) error { return c.send(FrameKill, []byte(why)) }

// Next reads the next frame from the holder.
func (c *Conn) Next() (byte, []byte, error) { return readFrame(c.c) }

// Status asks a control connection for the session's status.
func (c *Conn) Status(ctx context.Context) (Status, error) {
	var st Status
	if d, ok := ctx.Deadline(); ok {
		_ = c.c.SetDeadline(d)
		defer c.c.SetDeadline(time.Time{})
	}
	if err := c.send(FrameStatus, nil); err != nil {
		return st, err
	}
	typ, p, err := c.Next()
	if err != nil {
		return st, err
	}
	if typ != FrameStatus {
		return st, fmt.Errorf("holder: want a status frame, got %q", typ)
	}
	return st, json.Unmarshal(p, &st)
}

// Close closes the connection (an attached client detaches).
func (c *Conn) Close() error { return c.c.Close() }

// readyWait is how long a new holder may take to open its socket.
const readyWait = 5 * time.Second

// Spawn starts `argv... DIR` (the holder command: this binary's
// session-holder) in a process session of its own, so that it outlives
// the node process, and waits until it serves. A holder that fails to
// start its program says why in DIR/exit.json, returned here. Secret
// (NAME=VALUE: the session's credential) goes to the program by way of
// the holder's environment, which only its account can read, never
// through a file.
func Spawn(ctx context.Context, argv []string, dir, secret string) error {
	logf, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], append(argv[1:], dir)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	if secret != "" {
		cmd.Env = append(os.Environ(), SecretEnv+"="+secret)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the session holder %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // reaps it while this process lives
	deadline := time.Now().Add(readyWait)
	for {
		if e, ok := ReadExit(dir); ok {
			return startFailed(e)
		}
		if c, err := Control(ctx, dir); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			if e, ok := ReadExit(dir); ok {
				return startFailed(e)
			}
			return fmt.Errorf("the session holder exited at once (see %s)", filepath.Join(dir, LogFile))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the session holder did not open its socket within %v (see %s)", readyWait, filepath.Join(dir, LogFile))
		}
	}
}

func startFailed(e Exit) error {
	if e.Error != "" {
		return fmt.Errorf("the session did not start: %s", e.Error)
	}
	return fmt.Errorf("the session's program exited at once, with status %d", e.Code)
}
