// Package bench is mure's load generator, run as "mure bench SCENARIO".
//
// # Runner
//
// Run drives an Op (one request of a logical client) in one of two modes:
//
//   - closed loop (Config.Rate == 0): Config.Clients workers each issue
//     requests back to back; the throughput is what the server sustains;
//   - open loop (Config.Rate > 0): requests are scheduled at a fixed rate on
//     a clock, whatever the answers, and their latency is measured from the
//     scheduled time, so that a stalled server shows up in the percentiles
//     instead of slowing the generator down (no coordinated omission). At
//     most Config.MaxOutstanding requests are in flight; a scheduled request
//     beyond that is not sent and is counted as dropped.
//
// A run is bounded by a request count, a duration, or both (the first
// reached stops it), and every request by a timeout, so a run always ends
// by itself. An optional warm-up precedes the measured phase and is left
// out of the figures.
//
// A Result holds the requests, successes, errors by kind ("http_503",
// "transport", "timeout", "length", ...), dropped requests, payload bytes,
// throughput in ops/s and MB/s (10^6 bytes per second of wall time, from the
// start of the measured phase to the last completion) and the latency
// percentiles p50, p90, p99, p99.9 and max of the successful requests,
// from an HDR histogram (1µs to 60s, 3 significant digits).
//
// A Report gathers the runs of a scenario by configuration (Group), with
// the mean, min, max and standard deviation of the throughput over the
// repetitions; WriteTable, WriteJSON and WriteChart (PNG or SVG, drawn with
// gonum.org/v1/plot) render it. A progress line is written only to a
// terminal (see Terminal), at most 4 times per second.
//
// # Scenarios
//
// replicated-io reproduces paper 000 (shared/seeds, "000"): C clients (20)
// each read or write a set of F files (50) of size s, for s in 1K, 4K, 16K,
// 64K, 256K, 1M, 4M; each client has its own set (<prefix>/c<i>/f<j>) or
// all share one (<prefix>/common/f<j>). The setup writes the files and, for
// reads, waits until every client can read its set; each client then loops
// over its set, round robin from a random start, with whole-file GETs
// (length verified) or PUTs (a per-client buffer whose first bytes change
// at every write). Client i is pinned to nodes[i % len(nodes)], as the
// paper's clients were spread over the servers, follows redirects, names
// itself bench-c<i> (X-Mure-Client, so that the "reads" resumption policy
// sees distinct clients) and makes one attempt per request, so that
// failures are counted rather than retried. The headline is MB/s.
//
// small-ops compares with SeaweedFS's published figures (15.7k PUT/s and
// 47k GET/s of 1 KiB files, 16 clients): 16 clients PUT new 1K and 4K
// files back to back, then GET, at random, the files they wrote. The
// headline is ops/s. The files are left under <prefix>/small/.
//
// # Usage
//
//	mure bench replicated-io --node 127.0.0.1:7946,127.0.0.1:7956 \
//	    --clients 20 --files 50 --sizes 1K,64K,1M --op read,write --sets own,common \
//	    --reps 8 --duration 10s --warmup 2s --json 000.json --chart 000.png --label "2 nodes"
//	mure bench small-ops --duration 10s --chart small.svg
//	mure bench small-ops --rate 2000 --duration 10s       # open loop, 2000 requests/s
//
// --count N bounds each run by N requests (all clients together) instead
// of, or as well as, --duration; --rate R switches to the open loop with at
// most --outstanding requests in flight. The table goes to standard output;
// --json and --chart write files.
package bench
