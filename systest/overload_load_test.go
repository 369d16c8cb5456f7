package systest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// errLog keeps the first few failures seen by concurrent goroutines.
type errLog struct {
	mu   sync.Mutex
	list []string
	more int
}

func (l *errLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) < 10 {
		l.list = append(l.list, fmt.Sprintf(format, args...))
		return
	}
	l.more++
}

func (l *errLog) errs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.list...)
	if l.more > 0 {
		out = append(out, fmt.Sprintf("... and %d more", l.more))
	}
	return out
}

// overloadLoad is a closed loop of many clients, each sending its next
// request as soon as the last is answered, or, after a 503, once its
// Retry-After has passed (as the client library does): GETs of preloaded
// files hot/NN and, one request in five, a PUT of its own file.
type overloadLoad struct {
	requests, served, shed atomic.Int64
	errLog
	done chan struct{}
	wg   sync.WaitGroup
	tr   *http.Transport
}

func newOverloadLoad(addr string, clients, files, getLen, putSize int) *overloadLoad {
	l := &overloadLoad{done: make(chan struct{}), tr: &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}}
	hc := &http.Client{Transport: testcluster.Authorize(l.tr), Timeout: 30 * time.Second}
	body := bytes.Repeat([]byte("p"), putSize)
	for i := range clients {
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.done:
					return
				default:
				}
				var retry time.Duration
				if n%5 == 4 {
					req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/files/put/c%d", addr, i), bytes.NewReader(body))
					retry = l.do(hc, req, -1)
				} else {
					req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/files/hot/%02d", addr, (i+n)%files), nil)
					retry = l.do(hc, req, getLen)
				}
				if retry > 0 {
					select {
					case <-l.done:
						return
					case <-time.After(retry):
					}
				}
			}
		})
	}
	return l
}

// do sends one request; wantLen ≥ 0 is the body length a success must
// have. It returns the Retry-After of a refusal.
func (l *overloadLoad) do(hc *http.Client, req *http.Request, wantLen int) (retry time.Duration) {
	l.requests.Add(1)
	what := req.Method + " " + req.URL.Path
	resp, err := hc.Do(req)
	if err != nil {
		l.add("%s: %v", what, err)
		return 0
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		l.add("%s: %d, body: %v", what, resp.StatusCode, err)
	case resp.StatusCode == http.StatusServiceUnavailable:
		var e struct{ Code string }
		_ = json.Unmarshal(b, &e)
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if e.Code != "overloaded" || secs <= 0 {
			l.add("%s: 503 with code %q, Retry-After %q: %s", what, e.Code, resp.Header.Get("Retry-After"), b)
			return 0
		}
		l.shed.Add(1)
		return time.Duration(secs) * time.Second
	case resp.StatusCode/100 != 2:
		l.add("%s admitted but failed: %d %s", what, resp.StatusCode, b)
	case wantLen >= 0 && len(b) != wantLen:
		l.add("%s: %d bytes, want %d", what, len(b), wantLen)
	default:
		l.served.Add(1)
	}
	return 0
}

// stop ends the load and waits for its clients.
func (l *overloadLoad) stop() {
	close(l.done)
	l.wg.Wait()
	l.tr.CloseIdleConnections()
}

// probeLog asks a node for /healthz, /metrics and /status every 20 ms
// until stopped: every answer must be 200. It counts the /metrics answers
// that show every admission slot taken.
type probeLog struct {
	count, saturated atomic.Int64
	slowest          atomic.Int64 // nanoseconds
	errLog
}

func (p *probeLog) run(addr string, maxInFlight int, stop <-chan struct{}) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: testcluster.Authorize(tr), Timeout: 10 * time.Second}
	full := []byte("mure_admission_in_flight " + strconv.Itoa(maxInFlight) + "\n")
	pace := time.NewTicker(20 * time.Millisecond)
	defer pace.Stop()
	for {
		for _, path := range []string{"/healthz", "/metrics", "/status"} {
			start := time.Now()
			resp, err := hc.Get("http://" + addr + path)
			if err != nil {
				p.add("probe %s: %v", path, err)
				continue
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			p.count.Add(1)
			if d := int64(took); d > p.slowest.Load() {
				p.slowest.Store(d) // one prober: no race on the maximum
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				p.add("probe %s during overload: %d %v", path, resp.StatusCode, err)
				continue
			}
			if path == "/metrics" && bytes.Contains(b, full) {
				p.saturated.Add(1)
			}
		}
		select {
		case <-stop:
			return
		case <-pace.C:
		}
	}
}

// openFDs counts this process's open file descriptors (0 where /proc is
// not available).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}
