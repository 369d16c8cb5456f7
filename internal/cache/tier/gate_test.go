package tier

import (
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		queue   int
		latency time.Duration
		off     bool
		wait    time.Duration // before asking
		want    bool          // busy with two operations in flight
	}{
		{"under both", 3, time.Hour, false, 0, false},
		{"queue reached", 2, time.Hour, false, 0, true},
		{"oldest too old", 10, 5 * time.Millisecond, false, 20 * time.Millisecond, true},
		{"off", 1, time.Nanosecond, true, time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(tc.queue, tc.latency, tc.off)
			l1, ok1 := g.enter(false)
			l2, ok2 := g.enter(false)
			if !ok1 || !ok2 {
				t.Fatal("an idle disk refused an operation")
			}
			time.Sleep(tc.wait) // the operations' age is the signal itself
			if got := g.busy(); got != tc.want {
				t.Errorf("busy = %v, want %v", got, tc.want)
			}
			if l, ok := g.enter(false); ok == tc.want {
				t.Errorf("enter admitted = %v while busy = %v", ok, tc.want)
			} else if ok {
				l()
			}
			if l, ok := g.enter(true); !ok {
				t.Error("a must operation was refused")
			} else {
				l()
			}
			l1()
			l2()
			if g.busy() {
				t.Error("still busy with nothing in flight")
			}
		})
	}
}
