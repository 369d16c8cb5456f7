package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Params are the parameters of a scenario. Zero values take the scenario's
// defaults; a scenario rejects a parameter it does not use (see
// Scenario.Uses).
type Params struct {
	Nodes   []string // client API addresses, host:port
	Token   string
	Clients int      // concurrent logical clients
	Files   int      // files per set
	Sizes   []int64  // file sizes
	Ops     []string // "read", "write"
	Sets    []string // "own", "common"
	Reps    int      // runs per configuration
	Load    Load
	Label   string    // free text recorded in the report
	Prefix  string    // first path segment of the files written (default "bench")
	Status  io.Writer `json:"-"` // progress and setup lines (a terminal), nil: silent

	// conn-rate: the page every request GETs (an absolute http:// URL,
	// usually the front door's), the body length it must have (0: any
	// non-empty body) and the free-text name of the dispatch policy the
	// cluster runs, which names the report's series (the scenario cannot
	// see the policy: it is set on the server side).
	URL    string `json:",omitempty"`
	Length int64  `json:",omitempty"`
	Policy string `json:",omitempty"`
	// SHA256, when set (hex), is the digest every body must have.
	SHA256 string `json:",omitempty"`

	// For a run spread over several load generators (RunDistributed):
	// ClientBase is the global index of this generator's first client
	// (files and node choice follow the global index); Phase "setup" only
	// writes the files and waits until they are readable, "run" skips that
	// and starts the warm-up at StartAt, so that all generators measure the
	// same interval.
	ClientBase int       `json:",omitempty"`
	Phase      string    `json:",omitempty"`
	StartAt    time.Time `json:",omitzero"`
	// Scenario names the scenario of a job sent to a worker (ServeJob;
	// default replicated-io).
	Scenario string `json:",omitempty"`
}

// Load shapes and bounds every measured run of a scenario (see Config).
type Load struct {
	Count          int64
	Duration       time.Duration
	Rate           float64
	MaxOutstanding int
	Warmup         time.Duration
	Timeout        time.Duration
}

// Scenario is a named benchmark.
type Scenario struct {
	Name, Summary string
	// Uses lists the optional parameters the scenario reads, by flag name:
	// "files", "sizes", "op", "sets", "url", "length", "policy", "sha256". Nodes,
	// clients, reps and the load are used by all.
	Uses []string
	Run  func(ctx context.Context, p Params) (*Report, error)
	// Distribute, when not nil, runs the scenario over several load
	// generators at once (mure testbed bench), merging their figures.
	Distribute func(ctx context.Context, p Params, workers []Worker) (*Report, error)
}

var scenarios = []Scenario{
	{
		Name:       "conn-rate",
		Summary:    "paper 001: new connections at a fixed rate to a dynamic page; connection, reply time and per-node CPU",
		Uses:       []string{"url", "length", "policy", "sha256"},
		Run:        RunConnRate,
		Distribute: RunConnRateDistributed,
	},
	{
		Name:       "replicated-io",
		Summary:    "paper 000: clients read or write sets of files of each size; MB/s",
		Uses:       []string{"files", "sizes", "op", "sets"},
		Run:        RunReplicatedIO,
		Distribute: RunDistributed,
	},
	{
		Name:    "small-ops",
		Summary: "PUT then GET of new small files by 16 clients; ops/s (SeaweedFS's benchmark)",
		Uses:    []string{"sizes"},
		Run:     RunSmallOps,
	},
}

// Scenarios returns the scenarios, sorted by name.
func Scenarios() []Scenario { return slices.Clone(scenarios) }

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// config returns the runner configuration of one run.
func (p *Params) config(name string) Config {
	l := p.Load
	return Config{
		Clients: p.Clients, Rate: l.Rate, MaxOutstanding: l.MaxOutstanding,
		Count: l.Count, Duration: l.Duration, Warmup: l.Warmup, Timeout: l.Timeout,
		Progress: p.Status, Name: name,
	}
}

// check validates the parameters common to every scenario, after defaults.
func (p *Params) check() error {
	if err := p.checkNodes(); err != nil {
		return err
	}
	if p.Prefix == "" || strings.Contains(p.Prefix, "/") {
		return fmt.Errorf("bad prefix %q: one path segment", p.Prefix)
	}
	return p.checkLoad()
}

// checkNodes checks that there is at least one node and no empty address.
func (p *Params) checkNodes() error {
	if len(p.Nodes) == 0 {
		return fmt.Errorf("no node")
	}
	for _, n := range p.Nodes {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("empty node address in %q", p.Nodes)
		}
	}
	return nil
}

// checkLoad checks the repetitions and the load.
func (p *Params) checkLoad() error {
	if p.Reps < 1 {
		return fmt.Errorf("reps must be at least 1 (got %d)", p.Reps)
	}
	cfg := p.config("")
	return cfg.Validate()
}

// oneOf checks that every value of list is among allowed and that there is
// no duplicate.
func oneOf(what string, list, allowed []string) error {
	if len(list) == 0 {
		return fmt.Errorf("no %s", what)
	}
	for i, v := range list {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("bad %s %q: want %s", what, v, strings.Join(allowed, " or "))
		}
		if slices.Contains(list[:i], v) {
			return fmt.Errorf("%s %q given twice", what, v)
		}
	}
	return nil
}

// status shows a setup step on the status writer.
func (p *Params) status(format string, a ...any) {
	if p.Status != nil {
		fmt.Fprintf(p.Status, "\r"+format+"\x1b[K", a...)
	}
}
