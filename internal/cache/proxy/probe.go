package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Probe is paper 003's relay-latency probe: every period it fetches one
// small object through the proxy and straight from its origin, so that
// the two latencies can be drawn together.
type Probe struct {
	// URL is the object as a client asks the proxy for it
	// (http://HOST/path, or /path of the default origin).
	URL string
	// Every is the period (0: 5 s).
	Every time.Duration
}

// ProbeStatus is the latest probe, in /status.
type ProbeStatus struct {
	At          time.Time `json:"at"`
	CacheSecs   float64   `json:"cache_seconds"`
	OriginSecs  float64   `json:"origin_seconds"`
	CacheError  string    `json:"cache_error,omitempty"`
	OriginError string    `json:"origin_error,omitempty"`
}

// prober runs a Probe against the proxy's own listener.
type prober struct {
	cfg     Probe
	proxy   string // the object's URL at the proxy's own listener
	host    string // the Host to ask the proxy for
	origin  string // the object's URL at its origin
	client  *http.Client
	latency *prometheus.GaugeVec
	mu      sync.Mutex
	last    ProbeStatus
}

// newProber resolves the probe's object against the origins.
func (h *Handler) newProber(p Probe, proxyAddr string, useTLS bool) (*prober, error) {
	u, err := url.Parse(p.URL)
	if err != nil || u.Path == "" {
		return nil, errBadProbe(p.URL)
	}
	host := u.Host
	if host == "" {
		host = proxyAddr
	}
	o := h.router.route(host, u.Path)
	if o == nil {
		return nil, errBadProbe(p.URL)
	}
	if p.Every <= 0 {
		p.Every = 5 * time.Second
	}
	scheme := "http://"
	if useTLS {
		scheme = "https://"
	}
	// The probe dials its own listener: with TLS it skips checking its own
	// certificate (issued for the names clients use, not this address).
	tr := &http.Transport{DisableCompression: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: useTLS}}
	return &prober{cfg: p, proxy: scheme + proxyAddr + u.RequestURI(), host: host, origin: o.URL.String() + u.RequestURI(),
		client: &http.Client{Timeout: 10 * time.Second, Transport: tr},
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "cache", Name: "probe_seconds",
			Help: "The latest time to fetch the probe object (--proxy-probe) through the proxy (via=cache) and from its origin (via=origin)."}, []string{"via"}),
	}, nil
}

type errBadProbe string

func (e errBadProbe) Error() string {
	return "proxy: --proxy-probe " + string(e) + ": want http://HOST/PATH or /PATH of a configured origin"
}

// run probes every period until ctx ends.
func (p *prober) run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		p.once(ctx)
		select {
		case <-ctx.Done():
			p.client.CloseIdleConnections()
			return
		case <-t.C:
		}
	}
}

func (p *prober) once(ctx context.Context) {
	st := ProbeStatus{At: time.Now()}
	st.CacheSecs, st.CacheError = p.fetch(ctx, p.proxy, p.host)
	st.OriginSecs, st.OriginError = p.fetch(ctx, p.origin, "")
	p.latency.WithLabelValues("cache").Set(st.CacheSecs)
	p.latency.WithLabelValues("origin").Set(st.OriginSecs)
	p.mu.Lock()
	p.last = st
	p.mu.Unlock()
}

// fetch times one whole GET.
func (p *prober) fetch(ctx context.Context, target, host string) (float64, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err.Error()
	}
	if host != "" {
		req.Host = host
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	secs := time.Since(start).Seconds()
	if err != nil {
		return secs, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return secs, resp.Status
	}
	return secs, ""
}

func (p *prober) status() ProbeStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}
