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
// conn-rate reproduces paper 001's CGI experiment (httperf against a CGI
// page, 10 new connections/s from each of 6 clients; reply time 215 ms
// with the master's round robin against 435 ms with a static hash): every
// request GETs --url over a new TCP connection (no keep-alive), follows
// the front door's redirect to the chosen node over another new connection
// (at most 4 hops; a loop is the error kind "redirect_loop") and reads the
// whole body, which must be a 200 of --length bytes (or any non-empty one).
// With --rate the connections are opened at that total rate, shared by the
// clients; without, the clients run back to back and replies/s is the
// capacity. Per request, net/http/httptrace gives httperf's figures
// (ConnTimes): connect (TCP connect, summed over the hops), reply (final
// hop: request written to the reply's first byte) and connection (first
// connect to the body's end), each an HDR histogram. During each measured
// run every node of --node is polled at GET /status every 500 ms for its
// host CPU counter and quota (CPUUsage): each node's use per interval in
// percent of its quota, the min/avg/max over the nodes per poll, and each
// node's mean. The series is named by --policy (the cluster's dispatch
// policy, set on the server side), so that `mure bench combine` sets
// several policies side by side; the chart shows the CPU spread over time
// per policy and the mean and p99 reply times. Over several generators
// (RunConnRateDistributed) only the coordinator polls the nodes.
//
// # Usage
//
//	mure bench replicated-io --node 127.0.0.1:7946,127.0.0.1:7956 \
//	    --clients 20 --files 50 --sizes 1K,64K,1M --op read,write --sets own,common \
//	    --reps 8 --duration 10s --warmup 2s --json 000.json --chart 000.png --label "2 nodes"
//	mure bench small-ops --duration 10s --chart small.svg
//	mure bench small-ops --rate 2000 --duration 10s       # open loop, 2000 requests/s
//	mure bench conn-rate --node 10.77.0.11:7946,10.77.0.12:7946 \
//	    --url 'http://FRONT/cgi/work.py?n=200000' --rate 60 --duration 60s \
//	    --policy round-robin --json rr.json
//
// --count N bounds each run by N requests (all clients together) instead
// of, or as well as, --duration; --rate R switches to the open loop with at
// most --outstanding requests in flight. The table goes to standard output;
// --json and --chart write files.
package bench
