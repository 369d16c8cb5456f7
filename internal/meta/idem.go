package meta

// IdemRecord remembers what one idempotent write (commit or delete)
// produced, so that a retry of it — through another node, after the first
// answer was lost — is recognised and not applied twice, even if other
// writes came in between.
type IdemRecord struct {
	Key     string `json:"key"`
	Kind    Kind   `json:"kind"`
	Path    string `json:"path"`
	Version uint64 `json:"version"`
}

// MaxIdem bounds the idempotency records kept: the most recent ones, over
// every file. A retry older than that many writes is applied as new.
const MaxIdem = 1 << 16

// retryOf reports whether c repeats the write that used its key.
func (s *State) retryOf(c Command) bool {
	r, ok := s.Idem(c.Idem)
	return ok && r.Path == c.Path && r.Kind == c.Kind
}

// Idem returns the record of an idempotency key, if still remembered.
func (s *State) Idem(key string) (IdemRecord, bool) {
	if key == "" {
		return IdemRecord{}, false
	}
	r, ok := s.idem[key]
	return r, ok
}

func (s *State) rememberIdem(r IdemRecord) {
	if r.Key == "" {
		return
	}
	if _, ok := s.idem[r.Key]; !ok {
		s.idemOrder = append(s.idemOrder, r.Key)
	}
	s.idem[r.Key] = r
	for len(s.idemOrder) > MaxIdem {
		delete(s.idem, s.idemOrder[0])
		s.idemOrder = s.idemOrder[1:]
	}
	if cap(s.idemOrder) > 4*MaxIdem {
		s.idemOrder = append([]string(nil), s.idemOrder...)
	}
}

// idemRecords returns the records oldest first (for snapshots).
func (s *State) idemRecords() []IdemRecord {
	out := make([]IdemRecord, 0, len(s.idemOrder))
	for _, k := range s.idemOrder {
		out = append(out, s.idem[k])
	}
	return out
}
