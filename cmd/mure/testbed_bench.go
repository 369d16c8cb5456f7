package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mure-dev/mure/internal/bench"
	"github.com/mure-dev/mure/internal/testbed"
)

func init() {
	register("bench-worker", "(internal) run one load job read from stdin; used by mure testbed bench", runBenchWorker)
}

// runTestbedBench runs a scenario (replicated-io, the default, or
// conn-rate) from every client host of the testbed at once against its
// nodes: mure testbed bench [SCENARIO] [mure bench flags]. The nodes default
// to the testbed's servers; conn-rate's --url must be reachable from the
// client hosts (a server's address, e.g. the front door's).
func runTestbedBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, bf := newBenchFlagSet(stderr)
	dir := fs.String("dir", testbed.DefaultDir, "`DIR` of the testbed's state")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 0, 1); err != nil {
		return err
	}
	name := "replicated-io"
	if len(pos) == 1 {
		name = pos[0]
	}
	sc, ok := bench.Lookup(name)
	if !ok || sc.Distribute == nil {
		return usageError(fs, "the testbed runs replicated-io or conn-rate (got %q)", name)
	}
	tb, err := testbed.Load(*dir)
	if err != nil {
		return err
	}
	clients := tb.Clients()
	if len(clients) == 0 {
		return fmt.Errorf("the testbed has no client host: `mure testbed up --clients N`")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["node"] {
		bf.nodes = strings.Join(tb.ServerHTTP(), ",")
	}
	p, err := bf.params(sc, set)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if f, ok := stderr.(*os.File); ok {
		p.Status = bench.Terminal(f)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var workers []bench.Worker
	for _, h := range clients {
		workers = append(workers, tb.BenchWorker(h, exe))
	}
	rep, runErr := sc.Distribute(ctx, p, workers)
	if rep == nil {
		return runErr
	}
	if err := writeBenchOutputs(stdout, bf, rep); err != nil {
		return err
	}
	return runErr
}

func runBenchWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 0 {
		return fmt.Errorf("bench-worker takes no arguments: it reads a job as JSON on stdin")
	}
	return bench.ServeJob(ctx, os.Stdin, stdout)
}
