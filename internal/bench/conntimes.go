package bench

import (
	"maps"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// ConnTimes are the times of conn-rate's successful requests, in httperf's
// terms (each request opens a new TCP connection per hop: the first one,
// and one more per redirect followed).
type ConnTimes struct {
	// Connect is the TCP connect time (connect started to established),
	// summed over the request's hops: httperf's "connection time: connect"
	// and the paper's definition of its connection time.
	Connect Latency `json:"connect"`
	// Reply is measured on the final hop, from the request written to the
	// first byte of the reply: httperf's "reply time: response", the
	// paper's reply time (its 215 vs 435 ms).
	Reply Latency `json:"reply"`
	// Connection is the whole request, from the first hop's connect started
	// to the final hop's body read to its end (the server closes the
	// connection after it): httperf's "connection time" (a connection's
	// lifetime), over all the hops.
	Connection Latency `json:"connection"`
	// Redirects counts the redirects followed; FinalHosts counts the
	// requests by the host:port that served the page (where the front
	// door sent them).
	Redirects  int64            `json:"redirects"`
	FinalHosts map[string]int64 `json:"final_hosts,omitempty"`

	hists [3]*hdrhistogram.Histogram // connect, reply, connection; nil after a JSON round trip
	// Histograms are the three histograms, only in the reports a worker
	// sends back for RunDistributed to merge.
	Histograms []*hdrhistogram.Snapshot `json:"histograms,omitempty"`
}

// fetchTimes are the times of one request (see ConnTimes).
type fetchTimes struct {
	connect, reply, connection time.Duration
	redirects                  int
	host                       string // of the final hop
}

// connRecorder collects the fetchTimes of the measured successful requests
// of one run; it is safe for concurrent use.
type connRecorder struct {
	mu        sync.Mutex
	hists     [3]*hdrhistogram.Histogram
	redirects int64
	hosts     map[string]int64
}

func newConnRecorder() *connRecorder {
	return &connRecorder{hists: [3]*hdrhistogram.Histogram{newHistogram(), newHistogram(), newHistogram()}, hosts: map[string]int64{}}
}

func (r *connRecorder) record(t fetchTimes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	recordLatency(r.hists[0], t.connect)
	recordLatency(r.hists[1], t.reply)
	recordLatency(r.hists[2], t.connection)
	r.redirects += int64(t.redirects)
	r.hosts[t.host]++
}

// times returns what was recorded.
func (r *connRecorder) times() *ConnTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	return newConnTimes(r.hists, r.redirects, maps.Clone(r.hosts))
}

func newConnTimes(h [3]*hdrhistogram.Histogram, redirects int64, hosts map[string]int64) *ConnTimes {
	if len(hosts) == 0 {
		hosts = nil
	}
	return &ConnTimes{
		Connect: summarize(h[0]), Reply: summarize(h[1]), Connection: summarize(h[2]),
		Redirects: redirects, FinalHosts: hosts, hists: h,
	}
}

// export fills Histograms from the histograms, for a worker's report.
func (t *ConnTimes) export() {
	if t == nil || t.hists[0] == nil {
		return
	}
	t.Histograms = nil
	for _, h := range t.hists {
		t.Histograms = append(t.Histograms, h.Export())
	}
}

// histogram returns histogram i, from the snapshot after a JSON round
// trip; nil when there is neither.
func (t *ConnTimes) histogram(i int) *hdrhistogram.Histogram {
	if t.hists[i] != nil {
		return t.hists[i]
	}
	if i < len(t.Histograms) && t.Histograms[i] != nil {
		return hdrhistogram.Import(t.Histograms[i])
	}
	return nil
}

// mergeConnTimes adds up the times of several runs; nil when none has any.
func mergeConnTimes(ts []*ConnTimes) *ConnTimes {
	var hs [3][]*hdrhistogram.Histogram
	var redirects int64
	hosts := map[string]int64{}
	any := false
	for _, t := range ts {
		if t == nil {
			continue
		}
		any = true
		for i := range hs {
			hs[i] = append(hs[i], t.histogram(i))
		}
		redirects += t.Redirects
		for h, n := range t.FinalHosts {
			hosts[h] += n
		}
	}
	if !any {
		return nil
	}
	return newConnTimes([3]*hdrhistogram.Histogram{mergeHistograms(hs[0]...), mergeHistograms(hs[1]...), mergeHistograms(hs[2]...)}, redirects, hosts)
}
