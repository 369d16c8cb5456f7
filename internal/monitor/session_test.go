package monitor

import (
	"testing"
	"time"
)

func TestSessions(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name    string
		opens   int
		at      time.Duration // when the first session is looked up, after the opens
		wantLen int
		firstOK bool
	}{
		{"one, fresh", 1, time.Minute, 1, true},
		{"one, expired", 1, sessionTTL + time.Second, 0, false},
		{"bounded: the oldest goes first", maxSessions + 10, time.Minute, maxSessions, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSessions()
			var ids []string
			for i := range tc.opens {
				ids = append(ids, s.open("u", "", now.Add(time.Duration(i)*time.Millisecond)))
			}
			_, ok := s.get(ids[0], now.Add(tc.at))
			if ok != tc.firstOK {
				t.Errorf("first session found %v, want %v", ok, tc.firstOK)
			}
			if got := s.count(); got != tc.wantLen {
				t.Errorf("%d sessions held, want %d", got, tc.wantLen)
			}
			last := ids[len(ids)-1]
			if tc.opens == 1 {
				return
			}
			if _, ok := s.get(last, now.Add(time.Minute)); !ok {
				t.Errorf("the newest session is gone")
			}
			s.close(last)
			if _, ok := s.get(last, now.Add(time.Minute)); ok {
				t.Errorf("a closed session still opens")
			}
		})
	}
	s := newSessions()
	a, b := s.open("u", "", now), s.open("u", "", now)
	if a == b || len(a) != 43 {
		t.Errorf("session IDs %q and %q: want distinct, 256 bits in base64url", a, b)
	}
	if _, ok := s.get(a+"x", now); ok {
		t.Errorf("a made-up ID opens a session")
	}
}
