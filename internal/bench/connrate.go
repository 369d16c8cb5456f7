package bench

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/pause"
)

// DefaultConnClients is conn-rate's default number of logical clients:
// paper 001's 6 client machines.
const DefaultConnClients = 6

// RunConnRate runs paper 001's CGI experiment: every request GETs p.URL
// (usually a dynamic page behind the front door) over a new TCP
// connection, follows redirects to the node the front door chose (a new
// connection per hop, at most maxHops) and reads and checks the whole body.
// With p.Load.Rate > 0 the requests are opened at that total rate, shared
// by the clients, whatever the answers (the paper: 10 connections/s from
// each of 6 clients); with Rate 0 the clients run back to back and the
// replies/s is the cluster's capacity. Each run records the connect,
// reply and connection times (ConnTimes) and, polling p.Nodes' status,
// every node's CPU use over time. The headline is replies/s; the series is
// named by p.Policy, the dispatch policy the cluster was set to.
func RunConnRate(ctx context.Context, p Params) (*Report, error) {
	p.connDefaults()
	if err := p.checkConn(); err != nil {
		return nil, err
	}
	f := newFetcher(p.URL, p.Length, p.SHA256)
	defer f.close()
	rep := newConnReport(&p)
	g := newConnGroup(&p)
	if err := pause.Until(ctx, p.StartAt); err != nil {
		return rep, err
	}
	for r := range p.Reps {
		var cpu *cpuSampler
		if p.Phase != "run" { // a worker of a distributed run: the coordinator polls
			cpu = startCPUSampler(ctx, p.Nodes, p.Token, time.Now().Add(p.Load.Warmup), CPUInterval)
		}
		rec := newConnRecorder()
		res, err := Run(ctx, p.config(fmt.Sprintf("%s rep %d/%d", g.Series, r+1, p.Reps)), connOp(f, rec))
		if cpu != nil {
			usage := cpu.stop()
			if res != nil {
				res.CPU = usage
			}
		}
		if err != nil {
			return nil, err
		}
		res.Conn = rec.times()
		g.Runs = append(g.Runs, res)
		if ctx.Err() != nil {
			break
		}
	}
	g.summarize()
	rep.Groups = append(rep.Groups, g)
	return rep, ctx.Err()
}

// RunConnRateDistributed runs conn-rate over several load generators: the
// clients and the rate are split among the workers, every measured run
// starts on all of them at the same instant, and their results are merged
// (replies/s add up, the time histograms merge); p.Load.Count, as in
// RunDistributed, bounds each generator's run. Only this coordinator polls
// the nodes' CPU, over the common measured phase.
func RunConnRateDistributed(ctx context.Context, p Params, workers []Worker) (*Report, error) {
	if len(workers) == 0 {
		return nil, errors.New("no load generator")
	}
	p.connDefaults()
	p.Clients = max(p.Clients, len(workers))
	if err := p.checkConn(); err != nil {
		return nil, err
	}
	rep := newConnReport(&p)
	g := newConnGroup(&p)
	job := p
	job.Scenario, job.Phase, job.Reps, job.Status, job.Nodes = "conn-rate", "run", 1, nil, nil
	for r := range p.Reps {
		p.status("%s rep %d/%d on %d generators", g.Series, r+1, p.Reps, len(workers))
		job.StartAt = time.Now().Add(startDelay)
		cpu := startCPUSampler(ctx, p.Nodes, p.Token, job.StartAt.Add(p.Load.Warmup), CPUInterval)
		reps, err := runJobs(ctx, job, workers, false)
		usage := cpu.stop()
		if err != nil {
			return rep, err
		}
		res, err := mergeWorkerRuns(reps)
		if err != nil {
			return rep, err
		}
		res.CPU = usage
		g.Runs = append(g.Runs, res)
	}
	p.status("")
	g.summarize()
	rep.Groups = append(rep.Groups, g)
	return rep, nil
}

// connDefaults fills in conn-rate's defaults.
func (p *Params) connDefaults() {
	p.Clients = cmp.Or(p.Clients, DefaultConnClients)
	p.Reps = cmp.Or(p.Reps, 1)
}

// checkConn validates conn-rate's parameters. A worker of a distributed
// run (phase "run") needs no node: it does not poll them.
func (p *Params) checkConn() error {
	if p.Phase != "run" {
		if err := p.checkNodes(); err != nil {
			return err
		}
	}
	if err := oneOf("phase", []string{cmp.Or(p.Phase, "all")}, []string{"all", "run"}); err != nil {
		return err
	}
	u, err := url.Parse(p.URL)
	switch {
	case p.URL == "":
		return errors.New("no URL to fetch")
	case err != nil:
		return fmt.Errorf("bad URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("bad URL %q: want http://HOST[:PORT]/PATH", p.URL)
	case p.Length < 0:
		return fmt.Errorf("length must not be negative (got %d)", p.Length)
	case p.SHA256 != "" && !isSHA256(p.SHA256):
		return fmt.Errorf("sha256 %q: want 64 lowercase hex digits", p.SHA256)
	}
	return p.checkLoad()
}

func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && s == strings.ToLower(s)
}

func newConnReport(p *Params) *Report {
	rep := newReport("conn-rate", MetricOpsPerSec, p)
	rep.URL = p.URL
	return rep
}

// newConnGroup is conn-rate's one configuration, named by the policy.
func newConnGroup(p *Params) *Group {
	return &Group{Series: cmp.Or(p.Policy, "GET"), Op: "get", Size: p.Length}
}

// connOp fetches the page once per request and records its times when it
// counts (not in the warm-up) and succeeded.
func connOp(f *fetcher, rec *connRecorder) Op {
	return func(ctx context.Context, c int) (int64, error) {
		n, t, err := f.fetch(ctx)
		if err == nil && isMeasured(ctx) {
			rec.record(t)
		}
		return n, err
	}
}
