package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/bench"
)

func init() { register("bench", "run a benchmark scenario (load generator)", runBench) }

// benchFlags are the flags of mure bench.
type benchFlags struct {
	nodes, token                 string
	clients, files, reps, maxOut int
	sizes, op, sets              string
	duration, warmup, timeout    time.Duration
	count                        int64
	rate                         float64
	jsonFile, chartFile, label   string
	url, policy, sha256          string
	length                       int64
}

func newBenchFlagSet(stderr io.Writer) (*flag.FlagSet, *benchFlags) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mure bench SCENARIO [flags]\n\n"+
			"Run a load against a cluster and print a table of throughput and latency.\n\nscenarios:\n")
		for _, s := range bench.Scenarios() {
			fmt.Fprintf(stderr, "  %-14s %s\n", s.Name, s.Summary)
		}
		fmt.Fprintf(stderr, "  %-14s %s\n", "combine", "FILE.json... : set saved reports side by side (--json, --chart, --label; --op, --sets filter)")
		fmt.Fprintf(stderr, "\nflags:\n")
		fs.PrintDefaults()
	}
	bf := &benchFlags{}
	node := os.Getenv("MURE_NODE")
	if node == "" {
		node = client.DefaultNode
	}
	fs.StringVar(&bf.nodes, "node", node, "comma-separated client API `ADDR`s; client i uses node i mod n; conn-rate polls their /status for CPU (env MURE_NODE)")
	secretVar(fs, &bf.token, "token", "MURE_TOKEN", "API bearer `TOKEN` (env MURE_TOKEN)")
	fs.IntVar(&bf.clients, "clients", 0, "`N` concurrent logical clients (default 20 for replicated-io, 16 for small-ops, 6 for conn-rate)")
	fs.IntVar(&bf.files, "files", bench.DefaultFiles, "`N` files per set (replicated-io)")
	fs.StringVar(&bf.sizes, "sizes", "", "comma-separated file `SIZES`, K/M/G = 1024^n (default 1K,4K,16K,64K,256K,1M,4M; small-ops 1K,4K)")
	fs.StringVar(&bf.op, "op", "read", "operations `OPS`: read, write or read,write (replicated-io)")
	fs.StringVar(&bf.sets, "sets", "own", "`KINDS` of sets: own (a set per client), common (one shared set) or own,common (replicated-io)")
	fs.IntVar(&bf.reps, "reps", 1, "run each configuration `N` times (the paper: 8)")
	fs.DurationVar(&bf.duration, "duration", 10*time.Second, "measured time per run; 0: bounded by --count only (--count alone sets 0)")
	fs.Int64Var(&bf.count, "count", 0, "bound each run by `N` measured requests, all clients together (0: no count bound)")
	fs.Float64Var(&bf.rate, "rate", 0, "open loop: schedule `R` requests per second, latency from the scheduled time (0: closed loop)")
	fs.IntVar(&bf.maxOut, "outstanding", 0, "open loop: at most `N` requests in flight, more are dropped (default max(256, clients))")
	fs.DurationVar(&bf.warmup, "warmup", 0, "unmeasured warm-up before each run")
	fs.DurationVar(&bf.timeout, "timeout", bench.DefaultTimeout, "per-request timeout")
	fs.StringVar(&bf.jsonFile, "json", "", "also write the report as JSON to `FILE`")
	fs.StringVar(&bf.chartFile, "chart", "", "also draw a chart to `FILE` (.png or .svg)")
	fs.StringVar(&bf.label, "label", "", "free `TEXT` shown in the table, JSON and chart (e.g. \"2 nodes, loopback\")")
	fs.StringVar(&bf.url, "url", "", "conn-rate: the page `URL` to GET, a new connection per request, redirects followed (e.g. http://FRONT/cgi/work.py?n=200000)")
	fs.Int64Var(&bf.length, "length", 0, "conn-rate: the body length in `BYTES` every reply must have (0: any non-empty body)")
	fs.StringVar(&bf.sha256, "sha256", "", "conn-rate: the SHA-256 (`HEX`) every reply's body must have (a mismatch is the error kind content)")
	fs.StringVar(&bf.policy, "policy", "", "conn-rate: `NAME` of the dispatch policy the cluster runs, naming the series (e.g. round-robin)")
	return fs, bf
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, bf := newBenchFlagSet(stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing SCENARIO")
	}
	if pos[0] == "combine" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return combineReports(pos[1:], bf, set, stdout)
	}
	if err := checkArgs(fs, pos, 1, 1); err != nil {
		return err
	}
	sc, ok := bench.Lookup(pos[0])
	if !ok {
		return usageError(fs, "unknown scenario %q", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	p, err := bf.params(sc, set)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if f, ok := stderr.(*os.File); ok {
		p.Status = bench.Terminal(f)
	}
	rep, runErr := sc.Run(ctx, p)
	if rep == nil {
		return runErr
	}
	if err := writeBenchOutputs(stdout, bf, rep); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: the table shows the runs done")
	}
	return runErr
}

// combineReports is `mure bench combine A.json B.json ...`: the reports'
// groups side by side in one table (and JSON, chart), labelled by report.
// --op and --sets, when given, keep only the groups of those operations and
// set kinds.
func combineReports(files []string, bf *benchFlags, set map[string]bool, stdout io.Writer) error {
	if len(files) == 0 {
		return errors.New("combine: give the JSON reports to combine")
	}
	var reps []*bench.Report
	for _, f := range files {
		r, err := bench.ReadJSON(f)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	rep, err := bench.Combine(reps)
	if err != nil {
		return err
	}
	rep.Label = bf.label
	keep := func(flagName, value, got string) bool {
		return !set[flagName] || slices.Contains(strings.Split(value, ","), got)
	}
	groups := rep.Groups[:0]
	for _, g := range rep.Groups {
		if keep("op", bf.op, g.Op) && keep("sets", bf.sets, g.Sets) {
			groups = append(groups, g)
		}
	}
	if rep.Groups = groups; len(groups) == 0 {
		return errors.New("combine: --op/--sets left nothing")
	}
	return writeBenchOutputs(stdout, bf, rep)
}

// writeBenchOutputs prints the report's table and writes its JSON and chart
// files when asked.
func writeBenchOutputs(stdout io.Writer, bf *benchFlags, rep *bench.Report) error {
	if err := bench.WriteTable(stdout, rep); err != nil {
		return err
	}
	if bf.jsonFile != "" {
		if err := bench.WriteJSON(bf.jsonFile, rep); err != nil {
			return err
		}
	}
	if bf.chartFile != "" {
		return bench.WriteChart(bf.chartFile, rep)
	}
	return nil
}

// params checks the flags and turns them into scenario parameters; set
// holds the flags given on the command line.
func (bf *benchFlags) params(sc bench.Scenario, set map[string]bool) (bench.Params, error) {
	p := bench.Params{Token: bf.token, Clients: bf.clients, Reps: bf.reps, Label: bf.label,
		URL: bf.url, Length: bf.length, Policy: bf.policy, SHA256: strings.ToLower(bf.sha256)}
	for _, name := range []string{"files", "sizes", "op", "sets", "url", "length", "policy", "sha256"} {
		if set[name] && !slices.Contains(sc.Uses, name) {
			return p, fmt.Errorf("--%s is not used by %s", name, sc.Name)
		}
	}
	for n := range strings.SplitSeq(bf.nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			p.Nodes = append(p.Nodes, n)
		}
	}
	if len(p.Nodes) == 0 {
		return p, errors.New("--node: no address")
	}
	if set["count"] && !set["duration"] {
		bf.duration = 0
	}
	switch {
	case bf.clients < 0:
		return p, fmt.Errorf("--clients must be at least 1")
	case bf.reps < 1:
		return p, fmt.Errorf("--reps must be at least 1")
	case bf.count < 0:
		return p, fmt.Errorf("--count must not be negative")
	case bf.duration < 0 || bf.warmup < 0:
		return p, fmt.Errorf("--duration and --warmup must not be negative")
	case bf.count == 0 && bf.duration == 0:
		return p, fmt.Errorf("each run needs a bound: --duration, --count or both")
	case bf.timeout <= 0:
		return p, fmt.Errorf("--timeout must be positive")
	case bf.rate < 0:
		return p, fmt.Errorf("--rate must not be negative")
	case bf.maxOut < 0:
		return p, fmt.Errorf("--outstanding must not be negative")
	case set["outstanding"] && bf.rate == 0:
		return p, fmt.Errorf("--outstanding applies to the open loop only: give --rate too")
	case slices.Contains(sc.Uses, "url") && bf.url == "":
		return p, fmt.Errorf("%s needs --url", sc.Name)
	case bf.length < 0:
		return p, fmt.Errorf("--length must not be negative")
	}
	if bf.url != "" {
		if u, err := url.Parse(bf.url); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return p, fmt.Errorf("--url %q: want http://HOST[:PORT]/PATH", bf.url)
		}
	}
	p.Load = bench.Load{Count: bf.count, Duration: bf.duration, Rate: bf.rate, MaxOutstanding: bf.maxOut,
		Warmup: bf.warmup, Timeout: bf.timeout}
	if slices.Contains(sc.Uses, "files") {
		if bf.files < 1 {
			return p, fmt.Errorf("--files must be at least 1")
		}
		p.Files = bf.files
	}
	if bf.sizes != "" {
		sizes, err := bench.ParseSizes(bf.sizes)
		if err != nil {
			return p, fmt.Errorf("--sizes: %v", err)
		}
		p.Sizes = sizes
	}
	var err error
	if slices.Contains(sc.Uses, "op") {
		if p.Ops, err = list("op", bf.op, "read", "write"); err != nil {
			return p, err
		}
	}
	if slices.Contains(sc.Uses, "sets") {
		if p.Sets, err = list("sets", bf.sets, "own", "common"); err != nil {
			return p, err
		}
	}
	if err := checkOutput("json", bf.jsonFile); err != nil {
		return p, err
	}
	if err := checkOutput("chart", bf.chartFile, ".png", ".svg"); err != nil {
		return p, err
	}
	return p, nil
}

// list parses a comma-separated list of allowed values.
func list(flagName, s string, allowed ...string) ([]string, error) {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("--%s: bad value %q: want %s", flagName, v, strings.Join(allowed, ", "))
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("--%s: %q given twice", flagName, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// checkOutput checks, before a long run, that an output file has one of
// the extensions exts (any when none) and that its directory exists.
func checkOutput(flagName, file string, exts ...string) error {
	if file == "" {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(file)); len(exts) > 0 && !slices.Contains(exts, ext) {
		return fmt.Errorf("--%s %s: want a %s file", flagName, file, strings.Join(exts, " or "))
	}
	if st, err := os.Stat(filepath.Dir(file)); err != nil || !st.IsDir() {
		return fmt.Errorf("--%s %s: no directory %s", flagName, file, filepath.Dir(file))
	}
	return nil
}
