package store

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Options tune a Store. The zero value is durable and uncached.
type Options struct {
	// NoSync skips fsync (tests/benchmarks only). Default false: every
	// Commit fsyncs file and directory.
	NoSync bool
	// CacheBytes bounds the in-memory cache of small blobs (0 disables).
	// CacheMaxBlob is the largest blob cached (default 64 KiB).
	CacheBytes   int64
	CacheMaxBlob int64
	// FS is the file system the store runs on (default OS()). Tests put a
	// disk that loses power here (internal/store/crashfs).
	FS FS
	// SmallMax is the largest blob appended to a segment file with group
	// commit (decision 0037) rather than stored in a file of its own:
	// many small writes then share one fsync, but such a blob is read
	// into memory rather than sent with sendfile. 0: 64 KiB; negative:
	// every blob in a file of its own.
	SmallMax int64
}

const (
	defaultCacheMaxBlob = 64 << 10
	defaultSmallMax     = 64 << 10
)

// Store is a node's local blob storage. All methods are safe for concurrent
// use.
type Store struct {
	dir        string
	blobs      string // <dir>/blobs
	tmp        string // <dir>/tmp
	quarantine string // <dir>/quarantine
	sync       bool
	fs         FS
	cache      *cache
	door       *doorkeeper // which blobs sent from a segment to cache (door.go)
	lock       io.Closer   // <dir>/LOCK, flock(2)ed

	// unverified holds the blobs to check before they are served (see
	// verify.go); stats counts the checks.
	unverified unverified
	stats      checkStats

	// stripes serialise mutations (Commit, Remove, RemoveExcept) of paths
	// whose hash shares a first byte; metadata readers (Stat, List, Walk,
	// Verify) take the read side to see a blob and its sidecar
	// consistently. Open takes no lock for verified blobs (see cache).
	stripes [numStripes]sync.RWMutex

	// life: mutators hold the read side for their duration so that Close
	// (write side) waits for them; closed is also readable lock-free.
	life   sync.RWMutex
	closed atomic.Bool

	nblobs atomic.Int64
	nbytes atomic.Int64

	// Small blobs (small.go): the segments, and per stripe an index
	// guarded by stripes[i]; compaction's worker (compact.go).
	smallMax    int64
	dirs        [numStripes]map[string]struct{} // layout.go
	log         *segLog
	small       [numStripes]map[pathKey][]smallEntry
	compacting  atomic.Bool
	compactMu   sync.Mutex
	compactQ    []*segment // guarded by compactMu
	compactWake chan struct{}
	compactStop chan struct{}
	compactDone chan struct{}

	// hookAppended, in tests, runs in a small commit between its append
	// and its wait for the fsync.
	hookAppended func(path string)
}

// Open opens (creating if needed) the store rooted at dir. It takes an
// exclusive lock on dir/LOCK, creates dir/blobs and dir/tmp, deletes any
// leftover in dir/tmp, and scans dir/blobs to drop half-committed entries
// and compute the Usage counters.
func Open(dir string, opts Options) (*Store, error) {
	dir = filepath.Clean(dir)
	s := &Store{
		dir:        dir,
		blobs:      filepath.Join(dir, blobsDir),
		tmp:        filepath.Join(dir, tmpDir),
		quarantine: filepath.Join(dir, quarantineDir),
		sync:       !opts.NoSync,
		fs:         opts.FS,
		smallMax:   opts.SmallMax,
	}
	if s.smallMax == 0 {
		s.smallMax = defaultSmallMax
	}
	if s.fs == nil {
		s.fs = OS()
	}
	maxBlob := opts.CacheMaxBlob
	if maxBlob <= 0 {
		maxBlob = defaultCacheMaxBlob
	}
	s.cache = newCache(opts.CacheBytes, maxBlob)
	s.door = newDoorkeeper()

	if err := mkdirAll(s.fs, dir); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	lock, err := s.fs.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	s.lock = lock
	if err := s.init(); err != nil {
		if s.log != nil {
			s.log.close()
		}
		lock.Close()
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) init() error {
	for _, d := range []string{s.blobs, s.tmp, s.quarantine} {
		if err := s.mkdirDurable(d); err != nil {
			return err
		}
	}
	if err := s.cleanTmp(); err != nil {
		return err
	}
	// Pre-create the 256 fan-out directories so that commits only ever
	// create (and removals only ever delete) the per-path directory.
	for i := 0; i < 256; i++ {
		if err := s.mkdirDurable(filepath.Join(s.blobs, fmt.Sprintf("%02x", i))); err != nil {
			return err
		}
	}
	if err := s.scan(); err != nil {
		return err
	}
	if err := s.openSegments(); err != nil {
		return err
	}
	s.startCompaction()
	return nil
}

// Close releases the directory lock and drops the cache. It waits for
// in-flight Commit/Remove calls; later calls fail with ErrClosed. Open Blobs
// stay readable. Close is idempotent.
func (s *Store) Close() error {
	s.stopCompaction()
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.log.close()
	s.cache.clear()
	return s.lock.Close()
}

// begin is called by mutators; the returned func must be deferred.
func (s *Store) begin() (func(), error) {
	s.life.RLock()
	if s.closed.Load() {
		s.life.RUnlock()
		return nil, ErrClosed
	}
	return s.life.RUnlock, nil
}

// Usage returns the number of committed blobs and their total size. The
// counters live in memory: computed at Open, maintained by Commit/Remove.
func (s *Store) Usage() (blobs int64, bytes int64) {
	return s.nblobs.Load(), s.nbytes.Load()
}

// DiskFree reports the bytes available to the store's user and the total
// size of the file system holding dir.
func (s *Store) DiskFree() (free, total uint64, err error) {
	free, total, err = statfs(s.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("store: statfs %s: %w", s.dir, err)
	}
	return free, total, nil
}
