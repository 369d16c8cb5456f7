package lincheck

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation on one file.
type Kind int

// Operations.
const (
	Read   Kind = iota // GET: Output.Value, or absent
	Write              // PUT Value
	CAS                // PUT Value with If-Match: the version of Expect
	Create             // PUT Value with If-None-Match: *
	Delete             // DELETE
)

func (k Kind) String() string {
	return [...]string{"read", "write", "cas", "create", "delete"}[k]
}

// Input is an operation as invoked.
type Input struct {
	Kind   Kind
	Key    string
	Value  string // written value (Write, CAS, Create)
	Expect string // CAS: the value whose ETag was sent in If-Match
}

// Outcome is how an operation ended.
type Outcome int

// Outcomes.
const (
	OK      Outcome = iota // applied (a read: Value is what it saw, "" = absent)
	Refused                // not applied because its condition did not hold: 412, or 404 for a delete
	Aborted                // not applied, for a reason that says nothing of the state (409)
	Unknown                // may or may not have been applied
)

var outcomeNames = [...]string{"ok", "refused", "aborted", "unknown"}

func (o Outcome) String() string { return outcomeNames[o] }

// Output is an operation's result.
type Output struct {
	Outcome Outcome
	Value   string // Read: the content ("" when absent)
}

// Model is a register per file with the operations above. State: the
// file's content, "" when absent.
var Model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		return step(state.(string), input.(Input), output.(Output))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		res := out.Outcome.String()
		switch in.Kind {
		case Read:
			return fmt.Sprintf("read(%s) -> %q", in.Key, out.Value)
		case CAS:
			return fmt.Sprintf("cas(%s, %q -> %q) %s", in.Key, in.Expect, in.Value, res)
		case Delete:
			return fmt.Sprintf("delete(%s) %s", in.Key, res)
		}
		return fmt.Sprintf("%s(%s, %q) %s", in.Kind, in.Key, in.Value, res)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
}

func step(state string, in Input, out Output) (bool, string) {
	if out.Outcome == Aborted && in.Kind != Read {
		return true, state
	}
	switch in.Kind {
	case Read:
		return out.Value == state, state
	case Write:
		if out.Outcome == Refused {
			return true, state
		}
		return true, in.Value
	case CAS:
		return conditional(state, state == in.Expect && state != "", in.Value, out)
	case Create:
		return conditional(state, state == "", in.Value, out)
	case Delete:
		switch out.Outcome {
		case OK:
			return state != "", ""
		case Refused:
			return state == "", state
		}
		return true, ""
	}
	return false, state
}

// conditional is the step of a write guarded by a condition holding (or
// not) in the current state.
func conditional(state string, holds bool, value string, out Output) (bool, string) {
	switch out.Outcome {
	case OK:
		return holds, value
	case Refused:
		return !holds, state
	}
	if holds {
		return true, value
	}
	return true, state
}
