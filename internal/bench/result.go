package bench

import (
	"github.com/HdrHistogram/hdrhistogram-go"
)

// MB is the unit of the MB/s figures: 10^6 bytes, as link speeds and the
// paper's throughput are counted.
const MB = 1e6

// Result is the outcome of one run (one Run call). Only the measured phase
// counts: requests scheduled (open loop) or started (closed loop) during
// the warm-up are left out.
type Result struct {
	Mode    string  `json:"mode"` // "closed" or "open"
	Clients int     `json:"clients"`
	Rate    float64 `json:"rate,omitempty"` // open loop: scheduled requests per second

	Requests   int64            `json:"requests"` // issued
	OK         int64            `json:"ok"`       // succeeded
	Errors     int64            `json:"errors"`   // failed
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Dropped    int64            `json:"dropped,omitempty"` // open loop: not issued, too many outstanding
	Bytes      int64            `json:"bytes"`             // payload bytes of the successful requests

	Elapsed   float64 `json:"elapsed_s"` // from the start of the measured phase to the last completion
	OpsPerSec float64 `json:"ops_per_s"` // OK / Elapsed
	MBPerSec  float64 `json:"mb_per_s"`  // Bytes / MB / Elapsed

	// Latency of the successful requests. In open loop it is measured from
	// the time a request was scheduled, not the time it was sent, so that
	// a slow server is not hidden by a late generator (coordinated
	// omission).
	Latency Latency `json:"latency"`

	// conn-rate only: the times of the successful requests (connect,
	// reply, connection) and the nodes' CPU use during the run.
	Conn *ConnTimes `json:"conn,omitempty"`
	CPU  *CPUUsage  `json:"cpu,omitempty"`

	hist *hdrhistogram.Histogram // nil after a JSON round trip

	// Histogram is the latency histogram itself, only in the reports a
	// worker sends back for RunDistributed to merge.
	Histogram *hdrhistogram.Snapshot `json:"histogram,omitempty"`
}
