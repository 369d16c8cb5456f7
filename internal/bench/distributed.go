package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Worker runs one job (a scenario with the given parameters) on a load
// generator, usually another process on another (emulated) host, and
// returns its report with the latency histograms (see ServeJob).
type Worker func(ctx context.Context, job Params) (*Report, error)

// startDelay is how far ahead RunDistributed sets the common start of a
// measured run, for every worker's process to be up by then.
const startDelay = 750 * time.Millisecond

// RunDistributed runs replicated-io over several load generators: p.Clients
// are split among the workers; for each set kind and size, the files are
// written (a common set by the first worker alone), then each measured run
// starts on every worker at the same instant and their results are merged
// into one: throughputs add up, latency histograms merge.
func RunDistributed(ctx context.Context, p Params, workers []Worker) (*Report, error) {
	if len(workers) == 0 {
		return nil, errors.New("no load generator")
	}
	p.ioDefaults()
	p.Clients = max(p.Clients, len(workers))
	if err := p.check(); err != nil {
		return nil, err
	}
	rep := newReport("replicated-io", MetricMBPerSec, &p)
	rep.Files = p.Files
	for _, sets := range p.Sets {
		for _, size := range p.Sizes {
			job := p
			job.Scenario = "replicated-io"
			job.Sets, job.Sizes, job.Reps, job.Status = []string{sets}, []int64{size}, 1, nil
			job.Phase = "setup"
			p.status("setup: %s set, %s files", sets, FormatSize(size))
			setupWorkers := workers
			if sets == "common" {
				setupWorkers = workers[:1]
			}
			if _, err := runJobs(ctx, job, setupWorkers, len(setupWorkers) == 1); err != nil {
				return rep, err
			}
			for _, op := range p.Ops {
				g := &Group{Series: op + " " + sets, Op: op, Sets: sets, Size: size}
				for r := range p.Reps {
					p.status("%s %s %s rep %d/%d on %d generators", op, sets, FormatSize(size), r+1, p.Reps, len(workers))
					job.Phase, job.Ops = "run", []string{op}
					job.StartAt = time.Now().Add(startDelay)
					reps, err := runJobs(ctx, job, workers, false)
					if err != nil {
						return rep, err
					}
					res, err := mergeWorkerRuns(reps)
					if err != nil {
						return rep, err
					}
					g.Runs = append(g.Runs, res)
				}
				g.summarize()
				rep.Groups = append(rep.Groups, g)
			}
		}
	}
	p.status("")
	return rep, nil
}

// runJobs runs job on every worker at once, each with its share of the
// clients and of an open loop's rate (all of them when whole), and returns
// their reports in order. A count bounds each worker's run.
func runJobs(ctx context.Context, job Params, workers []Worker, whole bool) ([]*Report, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make([]*Report, len(workers))
	var wg sync.WaitGroup
	base := 0
	for i, w := range workers {
		j := job
		j.ClientBase, j.Clients = 0, job.Clients
		if !whole {
			n := job.Clients / len(workers)
			if i < job.Clients%len(workers) {
				n++
			}
			j.ClientBase, j.Clients = base, n
			// an open loop's rate is the total: each its clients' share
			j.Load.Rate = job.Load.Rate * float64(n) / float64(job.Clients)
			base += n
		}
		wg.Go(func() {
			r, err := w(ctx, j)
			if err != nil {
				cancel(fmt.Errorf("load generator %d: %w", i+1, err))
				return
			}
			out[i] = r
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// mergeWorkerRuns merges the one run each worker's report holds; each
// must carry its latency histogram.
func mergeWorkerRuns(reps []*Report) (*Result, error) {
	var runs []*Result
	for i, r := range reps {
		if len(r.Groups) != 1 || len(r.Groups[0].Runs) != 1 {
			return nil, fmt.Errorf("load generator %d: want one run in its report, got %d groups", i+1, len(r.Groups))
		}
		run := r.Groups[0].Runs[0]
		if run.Histogram == nil && run.OK > 0 {
			return nil, fmt.Errorf("load generator %d: its run has no latency histogram", i+1)
		}
		runs = append(runs, run)
	}
	return mergeResults(runs), nil
}

// mergeResults adds up runs: counts and throughputs add up, the elapsed
// time is the longest, error kinds and latency histograms merge. For runs
// measured at the same time by different generators that is their
// combined result; for the repetitions of a group, their totals.
func mergeResults(runs []*Result) *Result {
	m := &Result{}
	var hs []*hdrhistogram.Histogram
	var conns []*ConnTimes
	for _, r := range runs {
		m.Mode = r.Mode
		m.Clients += r.Clients
		m.Rate += r.Rate
		m.Requests += r.Requests
		m.OK += r.OK
		m.Errors += r.Errors
		m.Dropped += r.Dropped
		m.Bytes += r.Bytes
		m.Elapsed = max(m.Elapsed, r.Elapsed)
		m.OpsPerSec += r.OpsPerSec
		m.MBPerSec += r.MBPerSec
		for k, v := range r.ErrorKinds {
			if m.ErrorKinds == nil {
				m.ErrorKinds = map[string]int64{}
			}
			m.ErrorKinds[k] += v
		}
		h := r.hist
		if h == nil && r.Histogram != nil {
			h = hdrhistogram.Import(r.Histogram)
		}
		hs = append(hs, h)
		conns = append(conns, r.Conn)
	}
	m.hist = mergeHistograms(hs...)
	m.Latency = summarize(m.hist)
	m.Conn = mergeConnTimes(conns)
	return m
}

// ServeJob is the worker's side: it reads a job (Params as JSON) from r,
// runs its scenario (p.Scenario, default replicated-io) and writes its
// report, histograms included, to w.
func ServeJob(ctx context.Context, r io.Reader, w io.Writer) error {
	var p Params
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return fmt.Errorf("read job: %w", err)
	}
	sc, ok := Lookup(cmp.Or(p.Scenario, "replicated-io"))
	if !ok {
		return fmt.Errorf("job: unknown scenario %q", p.Scenario)
	}
	rep, err := sc.Run(ctx, p)
	if err != nil {
		return err
	}
	for _, g := range rep.Groups {
		for _, run := range g.Runs {
			if run.hist != nil {
				run.Histogram = run.hist.Export()
			}
			run.Conn.export()
		}
	}
	return json.NewEncoder(w).Encode(rep)
}
