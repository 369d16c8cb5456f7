package lincheck

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// History collects operations from concurrent clients.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// NewHistory starts an empty history; times are measured from now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the timestamp to pass as an operation's call time.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records an operation invoked at call by client that has just
// returned. Reads of unknown outcome carry no information and are dropped;
// other operations of unknown outcome return at the end of time.
func (h *History) Add(client int, in Input, call int64, out Output) {
	h.AddNote(client, in, call, out, "")
}

// AddNote is Add with a note shown by Explain (e.g. which node answered).
func (h *History) AddNote(client int, in Input, call int64, out Output, note string) {
	ret := h.Now()
	if out.Outcome == Unknown {
		if in.Kind == Read {
			return
		}
		ret = math.MaxInt64
	}
	h.add(client, in, call, out, note, ret)
}

// AddBounded records a write of unknown outcome that is known to have
// taken effect, if at all, before now: e.g. a compare-and-set sent again
// with the same idempotency key and refused (if the first attempt was
// not applied by then, it never will be: the version it expects will
// never be current again).
func (h *History) AddBounded(client int, in Input, call int64) {
	h.add(client, in, call, Output{Outcome: Unknown}, "unknown, bounded", h.Now())
}

func (h *History) add(client int, in Input, call int64, out Output, note string, ret int64) {
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret, Metadata: note})
	h.mu.Unlock()
}

// Len returns the number of recorded operations.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Counts tallies operations by kind and outcome, for the test log.
func (h *History) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := map[string]int{}
	for _, op := range h.ops {
		out := op.Output.(Output)
		c[op.Input.(Input).Kind.String()+"/"+out.Outcome.String()]++
	}
	return c
}

// snapshot copies the operations for a check, writes of unknown outcome
// whose value was seen bounded (boundObserved).
func (h *History) snapshot() []porcupine.Operation {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	boundObserved(ops)
	return ops
}

// Check runs the checker. A timeout gives porcupine.Unknown, which callers
// must treat as a failure. When the history is not linearizable and
// vizPath is not empty, an HTML visualisation is written there.
func (h *History) Check(timeout time.Duration, vizPath string) (porcupine.CheckResult, error) {
	ops := h.snapshot()
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	if res == porcupine.Illegal && vizPath != "" {
		f, err := os.Create(vizPath)
		if err != nil {
			return res, fmt.Errorf("visualisation: %w", err)
		}
		defer f.Close()
		if err := porcupine.Visualize(Model, info, f); err != nil {
			return res, fmt.Errorf("visualisation: %w", err)
		}
	}
	return res, nil
}

// Explain returns, for the first file whose history is not linearizable,
// its operations in call order (times in ms from the start): the place to
// look when Check says Illegal.
func (h *History) Explain(timeout time.Duration) string {
	ops := h.snapshot()
	for _, part := range Model.Partition(ops) {
		if porcupine.CheckOperationsTimeout(Model, part, timeout) != porcupine.Illegal {
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		// The shortest illegal prefix (by call time) ends near the culprit.
		n := sort.Search(len(part), func(n int) bool {
			return porcupine.CheckOperationsTimeout(Model, part[:n+1], timeout) == porcupine.Illegal
		})
		var b strings.Builder
		fmt.Fprintf(&b, "deletes of this file:\n")
		for _, op := range part {
			if op.Input.(Input).Kind == Delete {
				fmt.Fprintf(&b, "%9.1f %9.1f c%d %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6, op.ClientId, Model.DescribeOperation(op.Input, op.Output))
			}
		}
		fmt.Fprintf(&b, "shortest illegal prefix: %d of %d operations; the last 25 of it:\n", n+1, len(part))
		for _, op := range part[max(0, n-24) : n+1] {
			ret := "    ∞"
			if op.Return != math.MaxInt64 {
				ret = fmt.Sprintf("%9.1f", float64(op.Return)/1e6)
			}
			fmt.Fprintf(&b, "%9.1f %s c%d %s %v\n", float64(op.Call)/1e6, ret, op.ClientId, Model.DescribeOperation(op.Input, op.Output), op.Metadata)
		}
		return b.String()
	}
	return ""
}

// Open returns how many writes the checker carries, open, to the end of
// time: of unknown outcome, and their value never seen. Each one can
// double the checker's search; the robustness tests log it.
func (h *History) Open() int {
	n := 0
	for _, op := range h.snapshot() {
		if op.Return == math.MaxInt64 {
			n++
		}
	}
	return n
}
