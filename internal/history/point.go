package history

import "math"

// Field names one figure of a Point. Its position in Fields is its index
// in Point.V.
type Field struct {
	// Name is the figure's key in the wire format.
	Name string
	// Unit says how to read the value ("fraction", "bytes", "bytes/s",
	// "1/s", "ms", "count").
	Unit string
	// Counter marks a figure the node reads as a running total; Rater
	// turns it into a rate per second.
	Counter bool
	// Max keeps a minute's largest value in the coarse series (latency
	// tails); the others keep the minute's mean.
	Max bool
}

// The figures of a node, in Point.V order.
const (
	CPU             = iota // of its quota (cgroup, else the machine's cores), 0..1
	Pressure               // CPU pressure: work waiting for a CPU, 0..1 (load average per core without PSI or a v1 quota: may pass 1)
	Mem                    // memory in use, page cache excluded
	MemLimit               // its limit (the machine's memory without one)
	DiskUsed               // bytes of blobs in the node's store
	DiskFree               // free bytes on the store's disk
	DiskRead               // bytes/s the process read from disk
	DiskWrite              // bytes/s the process wrote to disk
	NetRx                  // bytes/s received on the host's interfaces (loopback excluded)
	NetTx                  // bytes/s sent
	Conns                  // client connections open
	RequestRate            // client requests answered per second
	ErrorRate              // of which answered 5xx, per second
	P50                    // median latency of the second's requests, ms
	P99                    // their 99th percentile, ms
	Files                  // live files in the catalogue
	UnderReplicated        // live files with fewer valid copies than wanted
	Healing                // replicas this node still has to fetch (its backlog)
	Pending                // writes committed but not settled (resumption)
	Corrupt                // replicas found corrupt since the start (scrub)
	Scrub                  // bytes/s the scrub reads to verify replicas
	Decisions              // front-door decisions per second (on the holder)
	CacheHit               // caching proxy: requests answered fresh from the cache, per second
	CacheMiss              // requests that missed (fetched, or waited for another's fetch and missed), per second
	CacheStale             // requests answered stale (stale-while-revalidate, stale-if-error), per second
	CacheBypass            // requests not cacheable (passed through), per second
	CacheMem               // bytes/s of bodies sent from the memory tier
	CacheDisk              // bytes/s of bodies sent from the disk tier
	CacheOrigin            // bytes/s of bodies sent as the origin sent them
	CacheFetches           // requests sent to origins, per second
	CacheHitRatio          // of the second's requests, the share answered from the cache (hit, stale, collapsed)
	ProbeCache             // the relay-latency probe's latest fetch through the proxy, ms
	ProbeOrigin            // and straight from the origin, ms
	SessionsRunning        // persistent sessions running on the node
	SessionsLost           // its sessions marked lost (its holder gone)
	NumFields
)

// Fields describes Point.V, by index.
var Fields = [NumFields]Field{
	CPU:             {Name: "cpu", Unit: "fraction", Counter: true},
	Pressure:        {Name: "cpu_pressure", Unit: "fraction"},
	Mem:             {Name: "mem_bytes", Unit: "bytes"},
	MemLimit:        {Name: "mem_limit_bytes", Unit: "bytes"},
	DiskUsed:        {Name: "disk_used_bytes", Unit: "bytes"},
	DiskFree:        {Name: "disk_free_bytes", Unit: "bytes"},
	DiskRead:        {Name: "disk_read_bps", Unit: "bytes/s", Counter: true},
	DiskWrite:       {Name: "disk_write_bps", Unit: "bytes/s", Counter: true},
	NetRx:           {Name: "net_rx_bps", Unit: "bytes/s", Counter: true},
	NetTx:           {Name: "net_tx_bps", Unit: "bytes/s", Counter: true},
	Conns:           {Name: "connections", Unit: "count"},
	RequestRate:     {Name: "requests_ps", Unit: "1/s"},
	ErrorRate:       {Name: "errors_ps", Unit: "1/s"},
	P50:             {Name: "p50_ms", Unit: "ms", Max: true},
	P99:             {Name: "p99_ms", Unit: "ms", Max: true},
	Files:           {Name: "files", Unit: "count"},
	UnderReplicated: {Name: "under_replicated", Unit: "count", Max: true},
	Healing:         {Name: "healing", Unit: "count", Max: true},
	Pending:         {Name: "pending", Unit: "count", Max: true},
	Corrupt:         {Name: "corrupt", Unit: "count", Max: true},
	Scrub:           {Name: "scrub_bps", Unit: "bytes/s", Counter: true},
	Decisions:       {Name: "decisions_ps", Unit: "1/s", Counter: true},
	CacheHit:        {Name: "cache_hit_ps", Unit: "1/s", Counter: true},
	CacheMiss:       {Name: "cache_miss_ps", Unit: "1/s", Counter: true},
	CacheStale:      {Name: "cache_stale_ps", Unit: "1/s", Counter: true},
	CacheBypass:     {Name: "cache_bypass_ps", Unit: "1/s", Counter: true},
	CacheMem:        {Name: "cache_memory_bps", Unit: "bytes/s", Counter: true},
	CacheDisk:       {Name: "cache_disk_bps", Unit: "bytes/s", Counter: true},
	CacheOrigin:     {Name: "cache_origin_bps", Unit: "bytes/s", Counter: true},
	CacheFetches:    {Name: "cache_fetches_ps", Unit: "1/s", Counter: true},
	CacheHitRatio:   {Name: "cache_hit_ratio", Unit: "fraction"},
	ProbeCache:      {Name: "probe_cache_ms", Unit: "ms", Max: true},
	ProbeOrigin:     {Name: "probe_origin_ms", Unit: "ms", Max: true},
	SessionsRunning: {Name: "sessions_running", Unit: "count", Max: true},
	SessionsLost:    {Name: "sessions_lost", Unit: "count", Max: true},
}

// FieldIndex returns the index of the named field (false: unknown).
func FieldIndex(name string) (int, bool) {
	for i, f := range Fields {
		if f.Name == name {
			return i, true
		}
	}
	return 0, false
}

// Point is a node's figures at one time. Values are float32 to keep the
// ring small (a point is 152 bytes: 35 figures and the time, padded); NaN is "not known" (null on the wire).
type Point struct {
	// T is the time in Unix seconds (the sampling node's clock).
	T int64
	V [NumFields]float32
}

// Unknown returns a point at t with every figure unknown.
func Unknown(t int64) Point {
	p := Point{T: t}
	for i := range p.V {
		p.V[i] = float32(math.NaN())
	}
	return p
}

// Known reports whether field i holds a value.
func (p Point) Known(i int) bool { return !math.IsNaN(float64(p.V[i])) }
