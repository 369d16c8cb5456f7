package purge

import (
	"errors"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

func TestPart(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := NewPart()
	for i, tc := range []struct {
		key    string
		prefix bool
	}{{"_ /a", false}, {"_ /static/", true}} {
		op, err := Op(tc.key, tc.prefix, t0)
		if err != nil {
			t.Fatal(err)
		}
		if res := p.Apply(uint64(10+i), op); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if _, err := Op("", false, t0); !errors.Is(err, ErrBadPurge) {
		t.Errorf("empty key: %v", err)
	}
	if res := p.Apply(12, meta.Op{NS: NS, V: 1, Kind: "nope"}); !errors.Is(res.Err, meta.ErrBadCommand) {
		t.Errorf("unknown kind: %v", res.Err)
	}
	recs := p.Since(10)
	if len(recs) != 1 || recs[0].Seq != 11 || recs[0].Key != "_ /static/" {
		t.Fatalf("since 10: %+v", recs)
	}
	tests := []struct {
		name   string
		rec    Record
		key    string
		stored time.Time
		want   bool
	}{
		{"exact, stored before", p.Since(0)[0], "_ /a", t0.Add(-time.Second), true},
		{"exact, stored after", p.Since(0)[0], "_ /a", t0.Add(time.Second), false},
		{"exact is not a prefix", p.Since(0)[0], "_ /ab", t0.Add(-time.Second), false},
		{"prefix", recs[0], "_ /static/x.css", t0.Add(-time.Second), true},
		{"outside prefix", recs[0], "_ /other", t0.Add(-time.Second), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Matches(tc.key, tc.stored); got != tc.want {
				t.Errorf("matches = %v", got)
			}
		})
	}
	snap, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	q := NewPart()
	if err := q.Restore(snap); err != nil || len(q.Since(0)) != 2 {
		t.Fatalf("restore: %v %+v", err, q.Since(0))
	}
	if err := q.Restore(nil); err != nil || len(q.Since(0)) != 0 {
		t.Errorf("restore nil: %v", err)
	}
}

func TestBounded(t *testing.T) {
	p := NewPart()
	op, _ := Op("_ /x", false, time.Now())
	for i := range MaxRecords + 5 {
		p.Apply(uint64(i+1), op)
	}
	if n := len(p.Since(0)); n != MaxRecords {
		t.Errorf("%d records kept, want %d", n, MaxRecords)
	}
}
