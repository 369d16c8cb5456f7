package store

// SetSegmentMax makes s seal its segments at n bytes instead of 64 MiB,
// so that tests outside the package see segments sealed and compacted.
func SetSegmentMax(s *Store, n int64) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.max = n
}
