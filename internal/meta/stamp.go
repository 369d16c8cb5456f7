package meta

import (
	"encoding/json"
	"time"
)

// Stamp is a point in time kept as Unix nanoseconds (UTC), 8 bytes instead
// of time.Time's 24: a catalogue of millions of files holds one per record.
// The zero Stamp is the zero time. It covers the years 1678 to 2262.
type Stamp int64

// StampOf returns t as a Stamp.
func StampOf(t time.Time) Stamp {
	if t.IsZero() {
		return 0
	}
	return Stamp(t.UnixNano())
}

// Time returns the stamp as a time in UTC.
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// MarshalJSON writes the stamp as an RFC 3339 time, as time.Time does.
func (s Stamp) MarshalJSON() ([]byte, error) { return json.Marshal(s.Time()) }

// UnmarshalJSON reads an RFC 3339 time.
func (s *Stamp) UnmarshalJSON(b []byte) error {
	var t time.Time
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	*s = StampOf(t)
	return nil
}
