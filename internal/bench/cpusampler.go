package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/hostload"
)

// CPUInterval is how often conn-rate polls every node's status during a
// measured run.
const CPUInterval = 500 * time.Millisecond

// cpuPollTimeout bounds one poll of one node: a node at 100% CPU may answer
// late, but a poll must not hold up the next ones for long.
const cpuPollTimeout = 2 * time.Second

// cpuSampler polls every node's GET /status from a start time on, every
// interval, until stopped; it owns its goroutine.
type cpuSampler struct {
	addrs    []string
	nodes    []*client.Client
	hc       *http.Client
	start    time.Time
	interval time.Duration

	stopc    chan struct{}
	done     chan struct{}
	readings [][]cpuReading // written by the goroutine, read after done
	last     time.Time      // of the latest poll
}

// startCPUSampler starts polling nodes at start (the beginning of the
// measured phase) and then every interval. When start is now or past, the
// first poll is made before it returns, so that even a very short run is
// measured. The polls stop with ctx or stop.
func startCPUSampler(ctx context.Context, nodes []string, token string, start time.Time, interval time.Duration) *cpuSampler {
	s := &cpuSampler{addrs: nodes, start: start, interval: interval, stopc: make(chan struct{}), done: make(chan struct{})}
	s.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	for _, n := range nodes {
		s.nodes = append(s.nodes, client.New([]string{n}, client.WithToken(token), client.WithHTTPClient(s.hc), client.WithAttempts(1)))
	}
	if !start.After(time.Now()) {
		s.poll(ctx)
	}
	go s.loop(ctx)
	return s
}

func (s *cpuSampler) loop(ctx context.Context) {
	defer close(s.done)
	if len(s.readings) == 0 {
		timer := time.NewTimer(time.Until(s.start))
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return
		case <-s.stopc:
			return // stopped before the measured phase: nothing to measure
		case <-timer.C:
		}
		s.poll(ctx)
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopc:
			// the last interval, up to the end of the run, unless it is
			// too short to say much (a machine's counter ticks every 10
			// ms) and there are others
			if len(s.readings) < 2 || time.Since(s.last) >= s.interval/2 {
				s.poll(ctx)
			}
			return
		case <-tick.C:
			s.poll(ctx)
		}
	}
}

// poll reads every node's status at once.
func (s *cpuSampler) poll(ctx context.Context) {
	s.last = time.Now()
	out := make([]cpuReading, len(s.nodes))
	var wg sync.WaitGroup
	for i, c := range s.nodes {
		wg.Go(func() { out[i] = readCPU(ctx, c) })
	}
	wg.Wait()
	s.readings = append(s.readings, out)
}

// readCPU reads a node's host CPU counter and quota.
func readCPU(ctx context.Context, c *client.Client) cpuReading {
	ctx, cancel := context.WithTimeout(ctx, cpuPollTimeout)
	defer cancel()
	t0 := time.Now()
	raw, err := c.Status(ctx)
	t1 := time.Now()
	var st struct {
		Host *hostload.Sample `json:"host"`
	}
	if err != nil || json.Unmarshal(raw, &st) != nil || st.Host == nil {
		return cpuReading{}
	}
	return cpuReading{ok: true, at: t0.Add(t1.Sub(t0) / 2), cpu: st.Host.CPUSeconds, quota: st.Host.CPUQuota}
}

// stop takes a last reading, ends the polls and returns the use measured.
func (s *cpuSampler) stop() *CPUUsage {
	close(s.stopc)
	<-s.done
	s.hc.CloseIdleConnections()
	return cpuUsage(s.addrs, s.start, s.interval, s.readings)
}
