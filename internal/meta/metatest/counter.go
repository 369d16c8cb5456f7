// Package metatest holds a small part of the state machine for tests of
// namespaces: a set of named counters, in the namespace "counter".
package metatest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/mure-dev/mure/internal/meta"
)

// NS is the counters' namespace.
const NS = "counter"

// Counter is a part holding named counters. Version 1 has "add"; version 2
// adds "reset", so that tests can exercise a version one binary lacks.
type Counter struct {
	MaxVersion int
	values     map[string]int64
}

// New returns a counter part applying ops up to version v.
func New(v int) *Counter { return &Counter{MaxVersion: v, values: map[string]int64{}} }

// Add is the body of an "add" op.
type Add struct {
	Name string `json:"name"`
	By   int64  `json:"by"`
}

// AddOp returns a version 1 op adding by to name.
func AddOp(name string, by int64) meta.Op {
	b, _ := json.Marshal(Add{Name: name, By: by})
	return meta.Op{NS: NS, V: 1, Kind: "add", Body: b}
}

// ResetOp returns a version 2 op setting every counter to zero.
func ResetOp() meta.Op { return meta.Op{NS: NS, V: 2, Kind: "reset"} }

// Namespace implements meta.Part.
func (c *Counter) Namespace() string { return NS }

// Version implements meta.Part.
func (c *Counter) Version() int { return c.MaxVersion }

// Apply implements meta.Part.
func (c *Counter) Apply(idx uint64, op meta.Op) *meta.Result {
	switch op.Kind {
	case "add":
		var a Add
		if err := json.Unmarshal(op.Body, &a); err != nil || a.Name == "" {
			return &meta.Result{Err: fmt.Errorf("%w: add needs a name", meta.ErrBadCommand)}
		}
		c.values[a.Name] += a.By
		b, _ := json.Marshal(c.values[a.Name])
		return &meta.Result{Data: b}
	case "reset":
		clear(c.values)
		return &meta.Result{}
	}
	return &meta.Result{Err: fmt.Errorf("%w: counter has no op %q", meta.ErrBadCommand, op.Kind)}
}

// Value returns a counter (under the FSM's read lock: FSM.ReadPart).
func (c *Counter) Value(name string) int64 { return c.values[name] }

// Snapshot implements meta.Part.
func (c *Counter) Snapshot() ([]byte, error) {
	if len(c.values) == 0 {
		return nil, nil
	}
	return json.Marshal(c.values)
}

// Restore implements meta.Part.
func (c *Counter) Restore(b []byte) error {
	m := map[string]int64{}
	if b != nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
	}
	c.values = maps.Clone(m)
	return nil
}
