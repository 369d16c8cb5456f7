package admission

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// patience bounds every wait for a state the test expects; it is only
// reached when the test fails.
const patience = 10 * time.Second

// blocker is a handler that runs until released (or its client leaves).
type blocker struct {
	release    chan struct{}
	once       sync.Once
	running    atomic.Int64
	maxRunning atomic.Int64
	served     atomic.Int64
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{release: make(chan struct{})}
	t.Cleanup(b.open)
	return b
}

func (b *blocker) open() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := b.running.Add(1)
	for m := b.maxRunning.Load(); n > m && !b.maxRunning.CompareAndSwap(m, n); m = b.maxRunning.Load() {
	}
	select {
	case <-b.release:
	case <-r.Context().Done():
	}
	b.running.Add(-1)
	b.served.Add(1)
	w.WriteHeader(http.StatusOK)
}

// serve runs one request through h in the background; the recorder
// arrives on the channel when h returns.
func serve(ctx context.Context, h http.Handler, path string) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
		done <- rec
	}()
	return done
}

func serveNow(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitStats waits until inFlight requests run in b (so their slot and
// wait are accounted for) and queued wait.
func waitStats(t *testing.T, l *Limiter, b *blocker, inFlight, queued int) {
	t.Helper()
	waitFor(t, "in flight / queued", func() bool {
		f, q := l.Stats()
		return f == inFlight && q == queued && b.running.Load() == int64(inFlight)
	})
}

func recv(t *testing.T, c <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case rec := <-c:
		return rec
	case <-time.After(patience):
		t.Fatal("request did not finish")
		return nil
	}
}

// metric reads one sample of reg: a gauge's or counter's value, or a
// histogram's sample count. labels are name, value pairs.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

type wantMetrics struct {
	inFlight, queued, queueFull, timeout, waits float64
}

func checkMetrics(t *testing.T, reg *prometheus.Registry, want wantMetrics) {
	t.Helper()
	got := wantMetrics{
		inFlight:  metric(t, reg, "mure_admission_in_flight"),
		queued:    metric(t, reg, "mure_admission_queued"),
		queueFull: metric(t, reg, "mure_admission_rejected_total", "reason", "queue_full"),
		timeout:   metric(t, reg, "mure_admission_rejected_total", "reason", "timeout"),
		waits:     metric(t, reg, "mure_admission_wait_seconds"),
	}
	if got != want {
		t.Errorf("metrics = %+v, want %+v", got, want)
	}
}

// checkOverloaded asserts rec is the 503 "overloaded" answer.
func checkOverloaded(t *testing.T, rec *httptest.ResponseRecorder, retryAfter, msgPart string) {
	t.Helper()
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status = %d, want 503", rec.Code)
	}
	if got := rec.Header().Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After = %q, want %q", got, retryAfter)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var body struct{ Error, Code string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if body.Code != CodeOverloaded {
		t.Errorf("code = %q, want %q", body.Code, CodeOverloaded)
	}
	if !strings.Contains(body.Error, msgPart) {
		t.Errorf("error = %q, want it to contain %q", body.Error, msgPart)
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{MaxInFlight: 256, MaxQueue: 1024, QueueTimeout: 2 * time.Second, Exempt: DefaultExempt, RetryAfter: 1}},
		{"set", Config{MaxInFlight: 3, MaxQueue: 4, QueueTimeout: time.Second, Exempt: []string{"/x"}, RetryAfter: 7},
			Config{MaxInFlight: 3, MaxQueue: 4, QueueTimeout: time.Second, Exempt: []string{"/x"}, RetryAfter: 7}},
		{"no queue, nothing exempt", Config{MaxQueue: -1, Exempt: []string{}},
			Config{MaxInFlight: 256, MaxQueue: 0, QueueTimeout: 2 * time.Second, Exempt: []string{}, RetryAfter: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New(tc.in, nil).Config()
			if got.MaxInFlight != tc.want.MaxInFlight || got.MaxQueue != tc.want.MaxQueue ||
				got.QueueTimeout != tc.want.QueueTimeout || got.RetryAfter != tc.want.RetryAfter ||
				strings.Join(got.Exempt, ",") != strings.Join(tc.want.Exempt, ",") {
				t.Errorf("Config() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The 5th of 5 concurrent requests against 2 slots and 2 waiting places
// is turned away at once; the queued ones are served once the slots free.
func TestQueueFullThenDrain(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: 2, MaxQueue: 2, QueueTimeout: time.Minute, RetryAfter: 3}, reg)
	b := newBlocker(t)
	h := l.Wrap(b)

	var pending []<-chan *httptest.ResponseRecorder
	for range 4 {
		pending = append(pending, serve(context.Background(), h, "/files/a"))
	}
	waitStats(t, l, b, 2, 2)
	checkMetrics(t, reg, wantMetrics{inFlight: 2, queued: 2, waits: 2})

	checkOverloaded(t, serveNow(h, "/files/a"), "3", "2 requests in flight, 2 waiting); retry after 3 s")
	if n := b.running.Load(); n != 2 {
		t.Errorf("running = %d, want 2", n)
	}
	checkMetrics(t, reg, wantMetrics{inFlight: 2, queued: 2, queueFull: 1, waits: 2})

	b.open()
	for _, c := range pending {
		if rec := recv(t, c); rec.Code != http.StatusOK {
			t.Errorf("queued request: status %d, want 200", rec.Code)
		}
	}
	if got := b.served.Load(); got != 4 {
		t.Errorf("served = %d, want 4", got)
	}
	if got := b.maxRunning.Load(); got != 2 {
		t.Errorf("max running = %d, want 2", got)
	}
	checkMetrics(t, reg, wantMetrics{queueFull: 1, waits: 4})
}

func TestQueueTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: 2, MaxQueue: 2, QueueTimeout: timeout}, reg)
	b := newBlocker(t)
	h := l.Wrap(b)
	running := []<-chan *httptest.ResponseRecorder{
		serve(context.Background(), h, "/files/a"),
		serve(context.Background(), h, "/files/b"),
	}
	waitStats(t, l, b, 2, 0)

	start := time.Now()
	rec := serveNow(h, "/files/c")
	waited := time.Since(start)
	checkOverloaded(t, rec, "1", "retry after 1 s")
	if waited < timeout || waited > timeout+patience {
		t.Errorf("rejected after %v, want about %v", waited, timeout)
	}
	checkMetrics(t, reg, wantMetrics{inFlight: 2, timeout: 1, waits: 2})

	b.open()
	for _, c := range running {
		recv(t, c)
	}
	checkMetrics(t, reg, wantMetrics{timeout: 1, waits: 2})
}

func TestNoQueue(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: 1, MaxQueue: -1, QueueTimeout: time.Minute}, reg)
	b := newBlocker(t)
	h := l.Wrap(b)
	c := serve(context.Background(), h, "/files/a")
	waitStats(t, l, b, 1, 0)
	checkOverloaded(t, serveNow(h, "/files/b"), "1", "1 requests in flight, 0 waiting")
	b.open()
	recv(t, c)
	checkMetrics(t, reg, wantMetrics{queueFull: 1, waits: 1})
}

// Exempt paths answer while every slot and waiting place is taken.
func TestExempt(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: 2, MaxQueue: 2, QueueTimeout: time.Minute,
		Exempt: []string{"/healthz", "/readyz", "/metrics", "/status", "/debug/"}}, reg)
	b := newBlocker(t)
	mux := http.NewServeMux()
	mux.Handle("/files/", b)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/", ok)
	h := l.Wrap(mux)

	var pending []<-chan *httptest.ResponseRecorder
	for range 4 {
		pending = append(pending, serve(context.Background(), h, "/files/a"))
	}
	waitStats(t, l, b, 2, 2)

	for _, tc := range []struct {
		path string
		want int
	}{
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/metrics", http.StatusOK},
		{"/status", http.StatusOK},
		{"/status/detail", http.StatusOK},
		{"/debug/anything", http.StatusOK},
		{"/statusx", http.StatusServiceUnavailable}, // a prefix matches whole segments only
		{"/healthzz", http.StatusServiceUnavailable},
		{"/config", http.StatusServiceUnavailable},
		{"/files/b", http.StatusServiceUnavailable},
		{"/", http.StatusServiceUnavailable},
	} {
		t.Run(strings.ReplaceAll(tc.path, "/", "_"), func(t *testing.T) {
			if rec := serveNow(h, tc.path); rec.Code != tc.want {
				t.Errorf("GET %s: status %d, want %d", tc.path, rec.Code, tc.want)
			}
		})
	}
	b.open()
	for _, c := range pending {
		recv(t, c)
	}
	checkMetrics(t, reg, wantMetrics{queueFull: 5, waits: 4})
}

// A client that gives up while queued leaves without an answer and frees
// its place for the next request.
func TestCancelWhileQueued(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: 2, MaxQueue: 2, QueueTimeout: time.Minute}, reg)
	b := newBlocker(t)
	h := l.Wrap(b)
	var pending []<-chan *httptest.ResponseRecorder
	for range 2 {
		pending = append(pending, serve(context.Background(), h, "/files/a"))
	}
	waitStats(t, l, b, 2, 0)

	ctx, cancel := context.WithCancel(context.Background())
	gone := serve(ctx, h, "/files/gone")
	waitStats(t, l, b, 2, 1)
	checkMetrics(t, reg, wantMetrics{inFlight: 2, queued: 1, waits: 2})
	cancel()
	rec := recv(t, gone)
	if rec.Body.Len() != 0 || rec.Header().Get("Retry-After") != "" {
		t.Errorf("answered a client that left: %d %q", rec.Code, rec.Body.String())
	}
	waitStats(t, l, b, 2, 0)
	checkMetrics(t, reg, wantMetrics{inFlight: 2, waits: 2})

	// Both waiting places are free again.
	for range 2 {
		pending = append(pending, serve(context.Background(), h, "/files/b"))
	}
	waitStats(t, l, b, 2, 2)
	b.open()
	for _, c := range pending {
		if rec := recv(t, c); rec.Code != http.StatusOK {
			t.Errorf("status %d, want 200", rec.Code)
		}
	}
	if got := b.served.Load(); got != 4 {
		t.Errorf("served = %d, want 4 (the cancelled request must not run)", got)
	}
	checkMetrics(t, reg, wantMetrics{waits: 4})
}

// A handler that panics (net/http's http.ErrAbortHandler) gives its slot back.
func TestPanicReleasesSlot(t *testing.T) {
	l := New(Config{MaxInFlight: 1, MaxQueue: -1}, nil)
	h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	for range 3 {
		func() {
			defer func() {
				if v := recover(); v != http.ErrAbortHandler {
					t.Fatalf("recovered %v", v)
				}
			}()
			serveNow(h, "/files/a")
		}()
		if f, q := l.Stats(); f != 0 || q != 0 {
			t.Fatalf("after panic: in flight %d, queued %d", f, q)
		}
	}
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

func TestNoAllocWhenAdmitted(t *testing.T) {
	l := New(Config{MaxInFlight: 4}, prometheus.NewRegistry())
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w := discardWriter{http.Header{}}
	for _, path := range []string{"/files/a", "/healthz"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
			t.Errorf("%s: %v allocations per admitted request, want 0", path, n)
		}
	}
}

// A bounded burst over real HTTP: 200 requests at once against 4 slots
// and 8 waiting places with a 5 ms handler.
func TestBurst(t *testing.T) {
	const (
		requests     = 200
		maxInFlight  = 4
		maxQueue     = 8
		queueTimeout = 500 * time.Millisecond
		work         = 5 * time.Millisecond
		margin       = time.Second
	)
	baseline := runtime.NumGoroutine()

	reg := prometheus.NewRegistry()
	l := New(Config{MaxInFlight: maxInFlight, MaxQueue: maxQueue, QueueTimeout: queueTimeout}, reg)
	var running, maxRunning, maxQueued atomic.Int64
	var waitViolations atomic.Int64
	type startKey struct{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if waited := time.Since(r.Context().Value(startKey{}).(time.Time)); waited > queueTimeout+margin {
			waitViolations.Add(1)
		}
		n := running.Add(1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		if _, q := l.Stats(); int64(q) > maxQueued.Load() {
			maxQueued.Store(int64(q)) // only a sample: handlers race, but q is bounded anyway
		}
		time.Sleep(work)
		running.Add(-1)
		w.WriteHeader(http.StatusOK)
	})
	limited := l.Wrap(handler)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), startKey{}, time.Now())))
	}))
	tr := &http.Transport{}
	client := &http.Client{Transport: tr, Timeout: patience}

	var ok, rejected, other atomic.Int64
	var slow atomic.Int64
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			start := time.Now()
			resp, err := client.Get(srv.URL + "/files/k" + string(rune('a'+i%26)))
			if err != nil {
				other.Add(1)
				t.Errorf("request: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if time.Since(start) > queueTimeout+work+patience {
				slow.Add(1)
			}
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusServiceUnavailable:
				if resp.Header.Get("Retry-After") != "1" {
					t.Errorf("503 without Retry-After: 1")
				}
				rejected.Add(1)
			default:
				other.Add(1)
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	t.Logf("burst: %d admitted, %d rejected, max running %d", ok.Load(), rejected.Load(), maxRunning.Load())

	if ok.Load()+rejected.Load() != requests || other.Load() != 0 {
		t.Errorf("%d ok + %d rejected + %d other, want %d ok or rejected", ok.Load(), rejected.Load(), other.Load(), requests)
	}
	if ok.Load() < maxInFlight {
		t.Errorf("only %d admitted, want at least %d", ok.Load(), maxInFlight)
	}
	if n := maxRunning.Load(); n > maxInFlight {
		t.Errorf("%d handlers ran at once, limit %d", n, maxInFlight)
	}
	if n := maxQueued.Load(); n > maxQueue {
		t.Errorf("%d requests queued, limit %d", n, maxQueue)
	}
	if n := waitViolations.Load(); n != 0 {
		t.Errorf("%d admitted requests waited longer than %v", n, queueTimeout+margin)
	}
	if n := slow.Load(); n != 0 {
		t.Errorf("%d requests took longer than %v", n, queueTimeout+work+patience)
	}
	rejectedTotal := metric(t, reg, "mure_admission_rejected_total", "reason", "queue_full") +
		metric(t, reg, "mure_admission_rejected_total", "reason", "timeout")
	if rejectedTotal != float64(rejected.Load()) {
		t.Errorf("rejected_total = %v, want %d", rejectedTotal, rejected.Load())
	}
	if w := metric(t, reg, "mure_admission_wait_seconds"); w != float64(ok.Load()) {
		t.Errorf("wait_seconds count = %v, want %d", w, ok.Load())
	}
	if f, q := l.Stats(); f != 0 || q != 0 {
		t.Errorf("after the burst: in flight %d, queued %d", f, q)
	}

	tr.CloseIdleConnections()
	srv.Close()
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, baseline %d\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAcquire: a face that answers in its own format takes a free slot
// without waiting; with every slot taken and no waiting room it is refused
// with an *OverloadedError that says how loaded the node was; Release
// gives the slot back.
func TestAcquire(t *testing.T) {
	l := New(Config{MaxInFlight: 1, MaxQueue: -1, RetryAfter: 3}, nil)
	ctx := context.Background()
	if err := l.Acquire(ctx); err != nil {
		t.Fatalf("no slot taken from an idle limiter: %v", err)
	}
	var over *OverloadedError
	if err := l.Acquire(ctx); !errors.As(err, &over) || !errors.Is(err, ErrOverloaded) || over.InFlight != 1 || over.RetryAfter != 3 {
		t.Fatalf("a second slot from a limiter of one: %v (%+v), want an OverloadedError", err, over)
	}
	l.Release()
	if in, _ := l.Stats(); in != 0 {
		t.Fatalf("%d in flight after Release", in)
	}
	if err := l.Acquire(ctx); err != nil {
		t.Fatalf("no slot taken after Release: %v", err)
	}
}
