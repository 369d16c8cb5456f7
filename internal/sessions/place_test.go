package sessions

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// seat is an in-memory Cluster seam: this node and who is alive.
type seat struct {
	id    string
	alive map[string]bool
}

func (s seat) NodeID() string       { return s.id }
func (s seat) Alive(id string) bool { return id == s.id || s.alive[id] }
func (s seat) IsLeader() bool       { return true }
func (s seat) FSM() *meta.FSM       { return nil }
func (seat) ApplyOp(context.Context, meta.Op) (*meta.Result, error) {
	return nil, errors.New("no raft here")
}

// recorder is a Placer that records its candidates and takes the last.
type recorder struct{ got []string }

func (r *recorder) Place(_ context.Context, _ Kind, c []string) (string, error) {
	r.got = slices.Clone(c)
	return c[len(c)-1], nil
}

func TestPlaceNew(t *testing.T) {
	rec := &recorder{}
	cl := seat{id: "n2", alive: map[string]bool{"n1": true, "n3": true}}
	m, err := NewManager(Config{Placer: rec, HolderCommand: []string{"x"}}, cl)
	if err != nil {
		t.Fatal(err)
	}
	n, err := m.PlaceNew(context.Background(), "", []string{"n3", "n4", "n1", "n2"})
	if err != nil || n != "n3" {
		t.Fatalf("placed on %q (%v)", n, err)
	}
	if want := []string{"n2", "n1", "n3"}; !slices.Equal(rec.got, want) {
		t.Errorf("candidates %v, want this node first, then the live others sorted: %v", rec.got, want)
	}
	if _, err := m.PlaceNew(context.Background(), "nope", nil); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	def, _ := NewManager(Config{HolderCommand: []string{"x"}}, cl)
	if n, _ := def.PlaceNew(context.Background(), "shell", []string{"n1", "n3"}); n != "n2" {
		t.Errorf("the default placer put a new session on %s, want the node asked (n2)", n)
	}
}
