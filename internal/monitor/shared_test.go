package monitor

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/mure-dev/mure/internal/history"
)

func TestWithUser(t *testing.T) {
	view := []byte(`{"node":"n1","cluster_id":"c","time":5}`)
	for _, tc := range []struct {
		name, user string
		want       string
	}{
		{"none", "", ""},
		{"plain", "ann", "ann"},
		{"quoted", `a"b\c`, `a"b\c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v View
			if err := json.Unmarshal(withUser(view, tc.user), &v); err != nil {
				t.Fatalf("withUser made bad JSON: %v", err)
			}
			if v.User != tc.want || v.Node != "n1" || v.ClusterID != "c" || v.Time != 5 {
				t.Errorf("decoded %+v, want user %q and the view's own members", v, tc.want)
			}
		})
	}
}

// point is a fine point at t with its CPU figure set to cpu.
func point(t int64, cpu float32) history.Point {
	p := history.Unknown(t)
	p.V[history.CPU] = cpu
	return p
}

// TestHistoryShared: the whole history is encoded once per interval — a
// point added before the next publish is not in it, every point up to the
// publish is after it — with the marks of what it holds; since then sends
// each stream only what is newer than its marks.
func TestHistoryShared(t *testing.T) {
	s := New(Config{})
	for i := range int64(3) {
		s.set.Series("a").Add(point(1000+i, 0.5))
	}
	s.set.Series("b").Add(point(1000, 0.25))

	decode := func(b []byte) history.Dump {
		t.Helper()
		var d history.Dump
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	first, marks, err := s.historyJSON()
	if err != nil {
		t.Fatal(err)
	}
	if d := decode(first); len(d.Nodes["a"].Fine) != 3 || len(d.Nodes["b"].Fine) != 1 {
		t.Fatalf("whole history: a %d, b %d fine points, want 3 and 1", len(d.Nodes["a"].Fine), len(d.Nodes["b"].Fine))
	}
	if want := map[string][2]int64{"a": {1002, 0}, "b": {1000, 0}}; !maps.Equal(marks, want) {
		t.Fatalf("marks %v, want %v", marks, want)
	}

	s.set.Series("a").Add(point(1003, 0.75))
	for _, tc := range []struct {
		name    string
		publish bool
		wantA   int
	}{
		{"same interval: the encoding is shared", false, 3},
		{"after a publish: built again", true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.publish {
				s.shared.published()
			}
			b, _, err := s.historyJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(decode(b).Nodes["a"].Fine); got != tc.wantA {
				t.Errorf("a has %d fine points, want %d", got, tc.wantA)
			}
			if !tc.publish && &b[0] != &first[0] {
				t.Errorf("built again within one interval")
			}
		})
	}

	sent := maps.Clone(marks)
	d := s.since(sent)
	if got := d.Nodes["a"].Fine; len(got) != 1 || got[0].T != 1003 {
		t.Errorf("since the marks: a %v, want the one point at 1003", got)
	}
	if got := d.Nodes["b"].Fine; len(got) != 0 {
		t.Errorf("since the marks: b %v, want none", got)
	}
	if sent["a"][0] != 1003 {
		t.Errorf("mark of a %v after sending, want 1003", sent["a"])
	}
}
