package apps

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are mure_app_*: per app, answers by status class and latency.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// cgiWaiting counts requests waiting for a CGI slot.
	cgiWaiting prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "app", Name: "requests_total",
			Help: "Requests to apps (CGI programs as cgi/NAME, proxied apps by name) by status class: 2xx..5xx, or aborted (the client left or the answer was cut)."},
			[]string{"app", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "mure", Subsystem: "app", Name: "request_duration_seconds",
			Help:    "Time from a request reaching an app's handler to the end of its answer, by app.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 13)}, // 1 ms .. 60 s
			[]string{"app"}),
		cgiWaiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "app", Name: "cgi_waiting",
			Help: "Requests waiting for one of the node's CGI slots (--cgi-max-running)."}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.cgiWaiting)
	}
	return m
}

// serve runs h and records the answer under app, also when h panics
// (http.ErrAbortHandler cuts an answer short).
func (m metrics) serve(app string, w http.ResponseWriter, r *http.Request, h http.Handler) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	finished := false
	defer func() {
		class := "aborted"
		switch {
		case !finished:
		case rec.code != 0:
			class = strconv.Itoa(rec.code/100) + "xx"
		case r.Context().Err() == nil:
			class = "2xx" // nothing written: net/http answers 200
		}
		m.requests.WithLabelValues(app, class).Inc()
		m.duration.WithLabelValues(app).Observe(time.Since(start).Seconds())
	}()
	h.ServeHTTP(rec, r)
	finished = true
}

// recorder notes the status code; http.ResponseController reaches the
// real writer (Flush, Hijack for upgrades) through Unwrap.
type recorder struct {
	http.ResponseWriter
	code int
}

func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 && code >= 200 {
		rec.code = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

// Flush is here for code that asserts http.Flusher (cgi.Handler does
// not; ReverseProxy uses http.ResponseController).
func (rec *recorder) Flush() { _ = http.NewResponseController(rec.ResponseWriter).Flush() }

// Unwrap returns the wrapped writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
