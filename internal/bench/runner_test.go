package bench

import (
	"bytes"
	"context"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
)

// putOp writes small files to the fake through pinned clients.
func putOp(t *testing.T, nodes []string, clients int) Op {
	cs := newNodeClients(nodes, "", 0, clients)
	t.Cleanup(func() { closeNodeClients(cs) })
	var n atomic.Int64
	return func(ctx context.Context, c int) (int64, error) {
		p := "t/c" + strconv.Itoa(c) + "/" + strconv.FormatInt(n.Add(1), 10)
		_, err := cs[c].load.Put(ctx, p, strings.NewReader("0123456789"), nil)
		return 10, err
	}
}

func TestClosedLoopCountIsExact(t *testing.T) {
	f := newFakeNode(t)
	for _, warmup := range []time.Duration{0, 50 * time.Millisecond} {
		before := f.puts.Load()
		res, err := Run(context.Background(), Config{Clients: 8, Count: 100, Warmup: warmup}, putOp(t, []string{f.addr()}, 8))
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 100 || res.OK != 100 || res.Errors != 0 || res.Bytes != 1000 {
			t.Fatalf("warmup %v: %+v", warmup, res)
		}
		sent := f.puts.Load() - before
		if warmup == 0 && sent != 100 || warmup > 0 && sent < 100 {
			t.Fatalf("warmup %v: server saw %d PUTs", warmup, sent)
		}
		if res.Mode != "closed" || res.OpsPerSec <= 0 || res.MBPerSec <= 0 || res.Latency.Count != 100 {
			t.Fatalf("%+v", res)
		}
	}
}

func TestClosedLoopDurationStops(t *testing.T) {
	op := func(ctx context.Context, c int) (int64, error) {
		time.Sleep(time.Millisecond)
		return 1, nil
	}
	start := time.Now()
	res, err := Run(context.Background(), Config{Clients: 4, Duration: 200 * time.Millisecond}, op)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
	if res.Requests == 0 || res.OK != res.Requests || res.Elapsed <= 0 {
		t.Fatalf("%+v", res)
	}
}

// Count and duration together: the first reached stops the run.
func TestBothBounds(t *testing.T) {
	op := func(ctx context.Context, c int) (int64, error) { return 1, nil }
	res, err := Run(context.Background(), Config{Clients: 2, Count: 10, Duration: time.Hour}, op)
	if err != nil || res.Requests != 10 {
		t.Fatalf("%+v %v", res, err)
	}
	slow := func(ctx context.Context, c int) (int64, error) {
		time.Sleep(10 * time.Millisecond)
		return 1, nil
	}
	res, err = Run(context.Background(), Config{Clients: 1, Count: 1 << 40, Duration: 100 * time.Millisecond}, slow)
	if err != nil || res.Requests == 0 || res.Requests > 100 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestOpenLoopIssuesRateTimesDuration(t *testing.T) {
	f := newFakeNode(t)
	const rate, dur = 400, 500 * time.Millisecond
	res, err := Run(context.Background(), Config{Clients: 4, Rate: rate, Duration: dur}, putOp(t, []string{f.addr()}, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := float64(rate) * dur.Seconds()
	got := float64(res.Requests + res.Dropped)
	if got < 0.9*want || got > 1.1*want {
		t.Fatalf("scheduled %v requests, want %v ±10%%: %+v", got, want, res)
	}
	if f.puts.Load() != res.Requests || res.OK+res.Errors != res.Requests || res.Mode != "open" {
		t.Fatalf("server saw %d, result %+v", f.puts.Load(), res)
	}
}

func TestOpenLoopCountAndWarmup(t *testing.T) {
	var calls atomic.Int64
	op := func(ctx context.Context, c int) (int64, error) { calls.Add(1); return 1, nil }
	res, err := Run(context.Background(), Config{Clients: 3, Rate: 1000, Count: 50, Warmup: 20 * time.Millisecond}, op)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests+res.Dropped != 50 || calls.Load() < 50 {
		t.Fatalf("calls %d, %+v", calls.Load(), res)
	}
}

// Beyond MaxOutstanding, scheduled requests are dropped, not delayed.
func TestOpenLoopDrops(t *testing.T) {
	op := func(ctx context.Context, c int) (int64, error) {
		time.Sleep(50 * time.Millisecond)
		return 1, nil
	}
	res, err := Run(context.Background(), Config{Clients: 1, Rate: 100, Duration: 300 * time.Millisecond, MaxOutstanding: 1}, op)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests+res.Dropped != 30 || res.Dropped == 0 || res.Requests == 0 {
		t.Fatalf("%+v", res)
	}
}

// A server that serves one request at a time, slower than the arrival
// rate: latency from the scheduled time grows with the queue, far beyond
// the service time (no coordinated omission).
func TestOpenLoopLatencyFromSchedule(t *testing.T) {
	var mu sync.Mutex
	op := func(ctx context.Context, c int) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return 1, nil
	}
	res, err := Run(context.Background(), Config{Clients: 4, Rate: 100, Duration: 500 * time.Millisecond}, op)
	if err != nil {
		t.Fatal(err)
	}
	// 50 requests served at 20 ms each: the last waits ~500 ms.
	if res.Latency.Max < 300 {
		t.Fatalf("max latency %v ms, want >= 300 (service time 20 ms): %+v", res.Latency.Max, res)
	}
}

func TestErrorsCountedByKind(t *testing.T) {
	f := newFakeNode(t)
	cs := newNodeClients([]string{f.addr(), deadAddr(t)}, "", 0, 2)
	defer closeNodeClients(cs)
	if _, err := cs[0].setup.Put(context.Background(), "short", strings.NewReader("abc"), nil); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	op := func(ctx context.Context, c int) (int64, error) {
		switch n.Add(1) % 4 {
		case 0:
			_, err := cs[0].load.Put(ctx, "fail503/x", strings.NewReader("x"), nil)
			return 1, err
		case 1:
			return readWhole(ctx, cs[0].load, "missing", 1)
		case 2:
			return readWhole(ctx, cs[0].load, "short", 5) // 3 bytes stored
		}
		return readWhole(ctx, cs[0].load, "short", 3)
	}
	res, err := Run(context.Background(), Config{Clients: 1, Count: 40}, op)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"http_503": 10, "http_404": 10, KindLength: 10}
	if res.Requests != 40 || res.OK != 10 || res.Errors != 30 || !maps.Equal(res.ErrorKinds, want) {
		t.Fatalf("%+v", res)
	}
	dead := func(ctx context.Context, c int) (int64, error) { return readWhole(ctx, cs[1].load, "x", 1) }
	res, err = Run(context.Background(), Config{Clients: 1, Count: 3}, dead)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 3 || res.ErrorKinds[KindTransport] != 3 || res.Latency.Count != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&client.APIError{Status: 503}, "http_503"},
		{context.DeadlineExceeded, KindTimeout},
		{context.Canceled, KindCanceled},
		{&LengthError{Got: 1, Want: 2}, KindLength},
		{errNoData, KindNoData},
		{bytes.ErrTooLarge, KindTransport},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Clients: 0, Count: 1},
		{Clients: 1},
		{Clients: 1, Count: -1},
		{Clients: 1, Count: 1, Rate: -1},
		{Clients: 1, Duration: -time.Second},
	}
	for _, c := range bad {
		if _, err := Run(context.Background(), c, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestProgressOnlyWhenAsked(t *testing.T) {
	var buf syncBuffer
	op := func(ctx context.Context, c int) (int64, error) {
		time.Sleep(time.Millisecond)
		return 1000, nil
	}
	if _, err := Run(context.Background(), Config{Clients: 2, Duration: 600 * time.Millisecond, Progress: &buf, Name: "t"}, op); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	updates := strings.Count(out, "ops/s")
	if updates < 1 || updates > 4 || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Fatalf("%d updates: %q", updates, out)
	}
	if Terminal(nil) != nil {
		t.Fatal("nil file is a terminal")
	}
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Terminal(f) != nil {
		t.Fatal("a regular file is a terminal")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
