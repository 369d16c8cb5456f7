//go:build linux

package holder

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

// nobody is an unprivileged account present on every Debian system.
const nobody = 65534

func startHolder(t *testing.T, script string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the holder switches accounts: run as root")
	}
	return startSpec(t, Spec{ID: "t1", Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "TERM=xterm"},
		Dir: "/", UID: nobody, GID: nobody, Size: Size{Cols: 40, Rows: 10}, Scrollback: 100})
}

// startSpec runs a holder of spec s and waits until it serves.
func startSpec(t *testing.T, s Spec) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteSpec(dir, s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, dir) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the holder did not end")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := Control(ctx, dir); err == nil {
			c.Close()
			return dir
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder did not open its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readUntil reads frames until the screen or output holds want.
func readUntil(t *testing.T, c *Conn, want string) string {
	t.Helper()
	var seen strings.Builder
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for !strings.Contains(seen.String(), want) {
		typ, p, err := c.Next()
		if err != nil {
			tail := seen.String()
			tail = tail[max(0, len(tail)-200):]
			t.Fatalf("want %q, read %d bytes ending %q, then %v", want, seen.Len(), tail, err)
		}
		if typ == FrameScreen || typ == FrameOutput {
			seen.Write(p)
		}
	}
	return seen.String()
}

func TestAttachSeesScreenThenOutput(t *testing.T) {
	dir := startHolder(t, `id -u; echo ready; read line; echo "got $line"; sleep 30`)
	ctx := context.Background()
	a, err := Attach(ctx, dir, Size{Cols: 40, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "ready")
	a.Close()

	// A second client, later: the first frame is the screen, and with the
	// frames after it, what was written before it came. The emulator
	// applies the output behind the clients (screen.go): the screen is as
	// far as it got, and the output it has not applied yet follows it —
	// under load, "ready" or all of it. The program waits for input
	// meanwhile, so every frame until then is the snapshot's.
	b, err := Attach(ctx, dir, Size{Cols: 30, Rows: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	typ, p, err := b.Next()
	if err != nil || typ != FrameScreen {
		t.Fatalf("first frame %q %v", typ, err)
	}
	snap := string(p)
	if !strings.Contains(snap, "ready") {
		snap += readUntil(t, b, "ready")
	}
	if !strings.Contains(snap, "65534") {
		t.Fatalf("screen and the output after it %q lack the uid", snap)
	}
	if err := b.Input([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, b, "got hello")

	c, err := Control(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The first client's leaving is seen when the holder reads its
	// connection's end: a moment after Close.
	var st Status
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if st.Clients == 1 && st.Size == (Size{Cols: 30, Rows: 8}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v: want one client of 30x8 (the smallest wins)", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Kill("test"); err != nil {
		t.Fatal(err)
	}
	_ = b.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		typ, _, err := b.Next()
		if err != nil {
			t.Fatalf("no exit frame: %v", err)
		}
		if typ == FrameExit {
			break
		}
	}
	if e, ok := ReadExit(dir); !ok || e.Error != "test" {
		t.Fatalf("exit record %+v %v", e, ok)
	}
}

func TestRefusesPrivilegedAccounts(t *testing.T) {
	for _, uid := range []uint32{0, uint32(os.Geteuid())} {
		s := Spec{ID: "x", Argv: []string{"/bin/true"}, UID: uid, GID: nobody}
		if err := s.validate(); err == nil {
			t.Errorf("uid %d accepted", uid)
		}
	}
}

// A client that never reads neither stalls the session nor the other
// clients; when it reads again it gets a fresh screen, not the backlog.
func TestSlowClientGetsAFreshScreen(t *testing.T) {
	old := queueBytes
	queueBytes = 8 << 10
	t.Cleanup(func() { queueBytes = old })
	// 400 kB in 1000-column lines: more than the slow client's socket
	// buffers and queue hold (the emulator's pace is slow; few scrolls).
	dir := startHolder(t, `read go; head -c 400000 /dev/zero | tr '\0' x; echo; echo done-writing; sleep 30`)
	ctx := context.Background()
	slow, err := Attach(ctx, dir, Size{Cols: 1000, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_ = slow.c.(*net.UnixConn).SetReadBuffer(4 << 10)
	fast, err := Attach(ctx, dir, Size{Cols: 1000, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	if err := fast.Input([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, fast, "done-writing") // written while slow read nothing

	_ = slow.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	screens := 0
	var last []byte
	for !strings.Contains(string(last), "done-writing") {
		typ, p, err := slow.Next()
		if err != nil {
			t.Fatalf("slow client: %v after %d screens", err, screens)
		}
		if typ == FrameScreen {
			screens++
		}
		last = p
	}
	if screens < 2 {
		t.Fatalf("the slow client got %d screen(s): want the first and a fresh one after it fell behind", screens)
	}
}

// A flood of keystrokes all reaches the program.
func TestInputFlood(t *testing.T) {
	const n = 1 << 20
	dir := startHolder(t, `stty raw -echo; head -c 1048576 >/dev/null; echo got-all; sleep 30`)
	ctx := context.Background()
	c, err := Attach(ctx, dir, Size{Cols: 40, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readUntil(t, c, "")                // the first screen: the program runs
	time.Sleep(200 * time.Millisecond) // stty must have run before raw bytes count
	chunk := []byte(strings.Repeat("a", 16<<10))
	for sent := 0; sent < n; sent += len(chunk) {
		if err := c.Input(chunk); err != nil {
			t.Fatal(err)
		}
	}
	readUntil(t, c, "got-all")
}

// BenchmarkScreen measures how fast the holder's emulator takes output
// that scrolls (an 80x24 terminal, short lines): the pace a program
// printing without pause is held to. docs/benchmarks.md records figures.
func BenchmarkScreen(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "line %d of the output\r\n", i)
	}
	data := []byte(sb.String())
	e := vt.NewEmulator(80, 24)
	e.SetScrollbackSize(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_, _ = e.Write(data)
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "lines/s")
}

// The clients get the output at the PTY's pace, not the emulator's; a
// client attaching meanwhile gets the screen and the output the emulator
// has not applied yet, so it ends where the live stream goes on.
func TestOutputOutrunsTheScreen(t *testing.T) {
	dir := startHolder(t, `read go; seq 1 100000; echo all-written; sleep 30`)
	ctx := context.Background()
	a, err := Attach(ctx, dir, Size{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Input([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "all-written")
	b, err := Attach(ctx, dir, Size{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_ = b.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, p, err := b.Next()
	if err != nil || typ != FrameScreen {
		t.Fatalf("first frame %q: %v", typ, err)
	}
	if strings.Contains(string(p), "all-written") {
		return // the emulator caught up already
	}
	// The rest comes at once, before any new output: the log's tail.
	readUntil(t, b, "all-written")
}
