package bench

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progressEvery is the interval between updates of the progress line (at
// most 4 per second).
const progressEvery = 250 * time.Millisecond

// Terminal returns f as a writer for progress lines if it is a terminal (a
// character device), else nil: no progress is shown in logs and pipes.
func Terminal(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}

// startProgress updates a one-line status on w until the returned function
// is called, which erases the line. A nil w shows nothing.
func startProgress(w io.Writer, name string, rec *recorder, start, measure time.Time) (stop func()) {
	if w == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprint(w, "\r\x1b[K")
				return
			case now := <-t.C:
				fmt.Fprint(w, "\r"+progressLine(name, rec, start, measure, now)+"\x1b[K")
			}
		}
	}()
	return func() { close(quit); <-done }
}

func progressLine(name string, rec *recorder, start, measure, now time.Time) string {
	if name != "" {
		name += "  "
	}
	if now.Before(measure) {
		return fmt.Sprintf("%swarm-up %.1fs", name, now.Sub(start).Seconds())
	}
	el := now.Sub(measure).Seconds()
	ok, bytes := rec.ok.Load(), rec.bytes.Load()
	s := fmt.Sprintf("%s%.1fs  %d ok  %d errors", name, el, ok, rec.errs.Load())
	if d := rec.dropped.Load(); d > 0 {
		s += fmt.Sprintf("  %d dropped", d)
	}
	if el > 0 {
		s += fmt.Sprintf("  %.0f ops/s  %.2f MB/s", float64(ok)/el, float64(bytes)/MB/el)
	}
	return s
}
