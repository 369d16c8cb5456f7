package lincheck

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestModelSteps(t *testing.T) {
	tests := []struct {
		name  string
		state string
		in    Input
		out   Output
		ok    bool
		next  string
	}{
		{"cas aborted says nothing", "a", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{Outcome: Aborted}, true, "a"},
		{"write aborted", "a", Input{Kind: Write, Value: "b"}, Output{Outcome: Aborted}, true, "a"},
		{"read sees state", "a", Input{Kind: Read}, Output{Value: "a"}, true, "a"},
		{"stale read", "b", Input{Kind: Read}, Output{Value: "a"}, false, "b"},
		{"read absent", "", Input{Kind: Read}, Output{Value: ""}, true, ""},
		{"write", "a", Input{Kind: Write, Value: "b"}, Output{}, true, "b"},
		{"write unknown", "a", Input{Kind: Write, Value: "b"}, Output{Outcome: Unknown}, true, "b"},
		{"cas ok", "a", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{}, true, "b"},
		{"cas ok but mismatch", "c", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{}, false, "b"},
		{"cas refused", "c", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{Outcome: Refused}, true, "c"},
		{"cas refused but matched", "a", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{Outcome: Refused}, false, "a"},
		{"cas unknown matches", "a", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{Outcome: Unknown}, true, "b"},
		{"cas unknown mismatch", "c", Input{Kind: CAS, Expect: "a", Value: "b"}, Output{Outcome: Unknown}, true, "c"},
		{"create ok", "", Input{Kind: Create, Value: "b"}, Output{}, true, "b"},
		{"create on existing", "a", Input{Kind: Create, Value: "b"}, Output{}, false, "b"},
		{"create refused", "a", Input{Kind: Create, Value: "b"}, Output{Outcome: Refused}, true, "a"},
		{"delete ok", "a", Input{Kind: Delete}, Output{}, true, ""},
		{"delete ok of nothing", "", Input{Kind: Delete}, Output{}, false, ""},
		{"delete not found", "", Input{Kind: Delete}, Output{Outcome: Refused}, true, ""},
		{"delete not found but present", "a", Input{Kind: Delete}, Output{Outcome: Refused}, false, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, next := step(tc.state, tc.in, tc.out)
			if ok != tc.ok || (ok && next != tc.next) {
				t.Fatalf("step(%q, %+v, %+v) = %v, %q; want %v, %q", tc.state, tc.in, tc.out, ok, next, tc.ok, tc.next)
			}
		})
	}
}

func TestCheckerBites(t *testing.T) {
	// write a, then (strictly after) a read that sees the initial state.
	h := NewHistory()
	h.ops = []porcupine.Operation{
		{ClientId: 0, Input: Input{Kind: Write, Key: "k", Value: "a"}, Call: 0, Output: Output{}, Return: 10},
		{ClientId: 1, Input: Input{Kind: Read, Key: "k"}, Call: 20, Output: Output{Value: ""}, Return: 30},
	}
	if res, _ := h.Check(5*time.Second, ""); res != porcupine.Illegal {
		t.Fatalf("stale read after an acknowledged write: %v, want Illegal", res)
	}
	// The same read overlapping the write is fine.
	h.ops[1].Call = 5
	if res, _ := h.Check(5*time.Second, ""); res != porcupine.Ok {
		t.Fatalf("overlapping read: %v, want Ok", res)
	}
	// A write of unknown outcome may never have happened.
	h.ops = []porcupine.Operation{
		{ClientId: 0, Input: Input{Kind: Write, Key: "k", Value: "a"}, Call: 0, Output: Output{Outcome: Unknown}, Return: 1 << 62},
		{ClientId: 1, Input: Input{Kind: Read, Key: "k"}, Call: 20, Output: Output{Value: ""}, Return: 30},
		{ClientId: 1, Input: Input{Kind: Read, Key: "k"}, Call: 40, Output: Output{Value: "a"}, Return: 50},
	}
	if res, _ := h.Check(5*time.Second, ""); res != porcupine.Ok {
		t.Fatalf("unknown write seen late: %v, want Ok", res)
	}
	// Bounded, it cannot take effect after a later write.
	h = NewHistory()
	h.AddBounded(0, Input{Kind: Write, Key: "k", Value: "a"}, h.Now())
	h.Add(1, Input{Kind: Write, Key: "k", Value: "b"}, h.Now(), Output{})
	h.Add(1, Input{Kind: Read, Key: "k"}, h.Now(), Output{Value: "a"})
	if res, _ := h.Check(5*time.Second, ""); res != porcupine.Illegal {
		t.Fatalf("bounded unknown write seen after a later write: %v, want Illegal", res)
	}
}

func TestBoundObserved(t *testing.T) {
	const end = math.MaxInt64
	w := func(kind Kind, value, expect string, call, ret int64, o Outcome) porcupine.Operation {
		return porcupine.Operation{Input: Input{Kind: kind, Key: "k", Value: value, Expect: expect}, Call: call, Return: ret, Output: Output{Outcome: o}}
	}
	read := func(value string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: Input{Kind: Read, Key: "k"}, Call: call, Return: ret, Output: Output{Value: value}}
	}
	tests := []struct {
		name    string
		ops     []porcupine.Operation
		wantOut Outcome
		wantRet int64
	}{
		{"seen by a read", []porcupine.Operation{w(Write, "a", "", 0, end, Unknown), read("a", 20, 30), read("a", 40, 50)}, OK, 30},
		{"seen by a cas", []porcupine.Operation{w(CAS, "a", "x", 0, end, Unknown), w(CAS, "b", "a", 20, 40, OK)}, OK, 40},
		{"a failed cas sees nothing", []porcupine.Operation{w(Create, "a", "", 0, end, Unknown), w(CAS, "b", "a", 20, 40, Refused)}, Unknown, end},
		{"never seen", []porcupine.Operation{w(Write, "a", "", 0, end, Unknown), read("b", 20, 30)}, Unknown, end},
		{"seen before it was called", []porcupine.Operation{w(Write, "a", "", 50, end, Unknown), read("a", 20, 30)}, Unknown, end},
		{"seen before it was called, and after", []porcupine.Operation{w(Write, "a", "", 50, end, Unknown), read("a", 20, 30), read("a", 60, 70)}, Unknown, end},
		{"bounded before its observer returned", []porcupine.Operation{w(CAS, "a", "x", 0, 25, Unknown), read("a", 20, 30)}, OK, 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			boundObserved(tc.ops)
			if got := tc.ops[0]; got.Output.(Output).Outcome != tc.wantOut || got.Return != tc.wantRet {
				t.Fatalf("write became %v returning at %d; want %v at %d", got.Output.(Output).Outcome, got.Return, tc.wantOut, tc.wantRet)
			}
		})
	}
	// Bounded, the checker still catches a stale read after the write.
	h := NewHistory()
	h.ops = []porcupine.Operation{w(Write, "a", "", 0, end, Unknown), read("a", 20, 30), w(Write, "b", "", 40, 50, OK), read("a", 60, 70)}
	if res, _ := h.Check(5*time.Second, ""); res != porcupine.Illegal {
		t.Fatalf("stale read of an observed unknown write: %v, want Illegal", res)
	}
}

// TestSavedHistory checks a history saved by a robustness run that failed
// or gave up (MURE_HISTORY=path), with a limit of MURE_CHECK_LIMIT (1m).
func TestSavedHistory(t *testing.T) {
	path := os.Getenv("MURE_HISTORY")
	if path == "" {
		t.Skip("set MURE_HISTORY to a history saved by a robustness run")
	}
	limit := time.Minute
	if d, err := time.ParseDuration(os.Getenv("MURE_CHECK_LIMIT")); err == nil {
		limit = d
	}
	h, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, _ := h.Check(limit, "")
	t.Logf("%d operations %v; checked in %v: %s", h.Len(), h.Counts(), time.Since(start).Round(time.Millisecond), res)
	if res != porcupine.Ok {
		t.Fatalf("checker verdict %s", res)
	}
}
