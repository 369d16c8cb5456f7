package tier

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// Config bounds the tiers.
type Config struct {
	// MemoryBytes bounds the bodies held in memory (0: 64 MiB).
	MemoryBytes int64
	// Dir is the disk tier's directory ("" : memory only).
	Dir string
	// DiskBytes bounds the disk tier's files (0: 1 GiB).
	DiskBytes int64
	// DiskQueue bounds the disk operations in flight (0: 64), and
	// DiskLatency how long the oldest of them may have run (0: 100 ms).
	// Past either, the disk is busy: Get refuses an object held only on
	// disk (ErrBusy) and Put keeps a new object in memory only, so that
	// the caller goes to the origin instead of queuing behind the disk.
	// A low bound sends more requests to the origin sooner; a high one
	// lets the disk's queue, and every miss's latency, grow first.
	DiskQueue   int
	DiskLatency time.Duration
	// WriteQueue bounds the bytes of objects waiting to be written to
	// disk (0: a quarter of MemoryBytes, at most 32 MiB). Put returns
	// once the object is in memory; the disk write follows in the
	// background, and an object that finds the queue full stays in memory
	// only. The queued bodies are held in the heap besides the memory
	// tier's (which evicts them while they wait), so the queue follows the
	// memory the operator gave the cache, not a fixed size.
	WriteQueue int64
	// NoBypass admits every disk operation however busy the disk is
	// (the baseline of paper 003's experiment).
	NoBypass bool
	// NoSync skips fsync (tests only).
	NoSync bool
	// BeforeDiskIO, when set, is called before every disk read and
	// write (tests: a slow or stuck disk).
	BeforeDiskIO func()
	Logger       *slog.Logger
}

// DefaultWriteQueue is the disk write queue's bound for a memory tier of
// memory bytes: a quarter of it, at most 32 MiB.
func DefaultWriteQueue(memory int64) int64 { return min(memory/4, 32<<20) }

// entry is the index's record of one object.
type entry struct {
	meta     *Meta
	id       string
	gen      uint64
	diskSize int64 // 0: not on disk
	lru      *list.Element
	writing  bool // its file is queued or being written
}

// Tiers is a cache's object store: an index of every object, the memory
// tier and the disk tier.
type Tiers struct {
	cfg    Config
	mem    *otter.Cache[string, *Object]
	disk   *disk
	gate   *gate
	writer *writer

	mu        sync.Mutex
	byKey     map[string][]*entry // primary key → variants
	byID      map[string]*entry
	gen       uint64
	diskBytes int64
	diskLRU   *list.List // of *entry, most recently used at the front

	promotions, demotions, diskEvictions, corrupt, refused, skipped, writeErrors atomic.Int64
}

// Open opens the tiers; with a directory, the objects already on disk are
// indexed again (their checksums are checked when first read).
func Open(cfg Config) (*Tiers, error) {
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = 64 << 20
	}
	if cfg.DiskBytes <= 0 {
		cfg.DiskBytes = 1 << 30
	}
	if cfg.DiskQueue <= 0 {
		cfg.DiskQueue = 64
	}
	if cfg.WriteQueue <= 0 {
		cfg.WriteQueue = DefaultWriteQueue(cfg.MemoryBytes)
	}
	if cfg.DiskLatency <= 0 {
		cfg.DiskLatency = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tiers{cfg: cfg, byKey: map[string][]*entry{}, byID: map[string]*entry{}, diskLRU: list.New(),
		gate: newGate(cfg.DiskQueue, cfg.DiskLatency, cfg.NoBypass)}
	mem, err := otter.New(&otter.Options[string, *Object]{
		MaximumWeight: uint64(cfg.MemoryBytes),
		Weigher: func(_ string, o *Object) uint32 {
			return uint32(min(int64(len(o.Body))+512, 1<<32-1))
		},
		OnDeletion: t.onMemoryDeletion,
	})
	if err != nil {
		return nil, fmt.Errorf("cache memory tier: %w", err)
	}
	t.mem = mem
	if cfg.Dir != "" {
		t.disk = &disk{dir: cfg.Dir, noSync: cfg.NoSync}
		err := t.disk.scan(func(m *Meta, size int64) {
			e := t.addLocked(m)
			e.diskSize = size
			e.lru = t.diskLRU.PushBack(e)
			t.diskBytes += size
		})
		if err != nil {
			return nil, fmt.Errorf("cache disk tier %s: %w", cfg.Dir, err)
		}
		t.evictDiskLocked()
		t.writer = newWriter(cfg.WriteQueue)
		go t.writer.run(t.write)
	}
	return t, nil
}

// addLocked indexes a new object, replacing the variant with its ID.
func (t *Tiers) addLocked(m *Meta) *entry {
	id := m.ID()
	if old := t.byID[id]; old != nil {
		t.dropLocked(old, false)
	}
	t.gen++
	e := &entry{meta: m, id: id, gen: t.gen}
	t.byID[id] = e
	t.byKey[m.Key] = append(t.byKey[m.Key], e)
	return e
}

// dropLocked removes an entry from the index (and its file with disk).
func (t *Tiers) dropLocked(e *entry, removeFile bool) {
	delete(t.byID, e.id)
	vs := t.byKey[e.meta.Key]
	for i, v := range vs {
		if v == e {
			vs = append(vs[:i:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) == 0 {
		delete(t.byKey, e.meta.Key)
	} else {
		t.byKey[e.meta.Key] = vs
	}
	if e.lru != nil {
		t.diskLRU.Remove(e.lru)
		e.lru = nil
		t.diskBytes -= e.diskSize
		if removeFile && t.disk != nil {
			t.disk.remove(e.id)
		}
	}
}

// onMemoryDeletion forgets an object evicted from memory that has no copy
// on disk; one with a copy is demoted.
func (t *Tiers) onMemoryDeletion(ev otter.DeletionEvent[string, *Object]) {
	if !ev.WasEvicted() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byID[ev.Key]
	if e == nil || !e.meta.ResponseTime.Equal(ev.Value.ResponseTime) {
		return
	}
	if e.lru != nil {
		t.demotions.Add(1)
		return
	}
	if !e.writing { // else it is on disk once its write lands
		t.dropLocked(e, false)
	}
}

// Variants returns the metas of the objects stored under a primary key.
func (t *Tiers) Variants(key string) []*Meta {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Meta
	for _, e := range t.byKey[key] {
		out = append(out, e.meta)
	}
	return out
}

// Get returns an object whole: from memory, else from disk (checked, and
// promoted to memory). A corrupt file is removed and ErrNotFound returned
// wrapped with ErrCorrupt. When the object is only on disk and the disk
// is busy, Get returns ErrBusy at once, counted in DiskRefused.
func (t *Tiers) Get(m *Meta) (*Object, error) { return t.get(m, true) }

// TryGet is Get for a caller that hands a refused request on to one that
// calls Get (the proxy's fast lane): its ErrBusy is not counted, so that
// one request's refusal counts once.
func (t *Tiers) TryGet(m *Meta) (*Object, error) { return t.get(m, false) }

func (t *Tiers) get(m *Meta, countRefusal bool) (*Object, error) {
	id := m.ID()
	if o, ok := t.mem.GetIfPresent(id); ok && o.ResponseTime.Equal(m.ResponseTime) {
		t.touch(id)
		return o, nil
	}
	if t.disk == nil {
		return nil, ErrNotFound
	}
	t.mu.Lock()
	e := t.byID[id]
	onDisk := e != nil && e.lru != nil
	t.mu.Unlock()
	if !onDisk {
		return nil, ErrNotFound
	}
	leave, ok := t.gate.enter(false)
	if !ok {
		if countRefusal {
			t.refused.Add(1)
		}
		return nil, ErrBusy
	}
	t.beforeIO()
	o, size, err := t.disk.read(id)
	leave()
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			t.corrupt.Add(1)
			t.cfg.Logger.Warn("cache object failed its checksum; removed", "id", id, "key", m.Key)
		}
		t.mu.Lock()
		if cur := t.byID[id]; cur == e {
			t.dropLocked(e, true)
		}
		t.mu.Unlock()
		return nil, errors.Join(ErrNotFound, err)
	}
	// The file's own meta goes out with its body. Two stores of the object
	// racing (each writes its file, then indexes its meta) can leave the
	// index naming the other response: the file, which landed last, wins.
	t.mu.Lock()
	if t.byID[id] == e && !e.meta.ResponseTime.Equal(o.ResponseTime) {
		m := o.Meta // a copy, as in Put: not a pointer into the body's object
		e.meta = &m
		t.diskBytes += size - e.diskSize
		e.diskSize = size
	}
	t.mu.Unlock()
	t.promotions.Add(1)
	t.mem.Set(id, o)
	t.touch(id)
	read := *o
	read.FromDisk = true
	return &read, nil
}

// touch marks an object used, for the disk tier's LRU.
func (t *Tiers) touch(id string) {
	t.mu.Lock()
	if e := t.byID[id]; e != nil && e.lru != nil {
		t.diskLRU.MoveToFront(e.lru)
	}
	t.mu.Unlock()
}

// beforeIO calls the test seam, if any.
func (t *Tiers) beforeIO() {
	if t.cfg.BeforeDiskIO != nil {
		t.cfg.BeforeDiskIO()
	}
}

// Busy reports whether the disk tier is past its capacity now (Get would
// refuse an object held only on disk).
func (t *Tiers) Busy() bool { return t.disk != nil && t.gate.busy() }

// Put stores a whole object in memory and queues its disk write,
// replacing the variant it names, and drops variants of its key that vary
// on other fields. It does no disk I/O but removing replaced files: when
// the disk is busy or its write queue full, the object stays in memory
// only (counted as skipped).
func (t *Tiers) Put(o *Object) error {
	o.Size = int64(len(o.Body))
	t.mu.Lock()
	var dropped []string
	for _, v := range append([]*entry(nil), t.byKey[o.Key]...) {
		if strings.Join(v.meta.Vary, ",") != strings.Join(o.Vary, ",") {
			t.dropLocked(v, true)
			dropped = append(dropped, v.id)
		}
	}
	old := t.byID[o.ID()]
	oldFile := old != nil && old.diskSize > 0
	// The index keeps a copy of the meta: a pointer into o would keep o,
	// and its body, alive as long as the object is on disk.
	m := o.Meta
	e := t.addLocked(&m) // drops old from the index, not its file
	// The disk write is queued before the object enters memory: the memory
	// tier's admission may evict a newcomer at once, and an entry queued
	// for writing stays indexed (onMemoryDeletion).
	if t.disk != nil {
		switch {
		case !t.gate.busy() && t.writer.push(job{e: e, o: o}):
			e.writing = true // its file replaces old's
		case oldFile:
			t.skipped.Add(1)
			t.disk.remove(e.id) // old's file would come back at a restart
		default:
			t.skipped.Add(1)
		}
	}
	t.mu.Unlock()
	for _, id := range dropped {
		t.mem.Invalidate(id)
	}
	t.mem.Set(e.id, o)
	return nil
}

// write is the writer's: it writes one queued object and indexes its file,
// unless the object was replaced or removed meanwhile.
func (t *Tiers) write(j job) {
	leave, _ := t.gate.enter(true)
	t.beforeIO()
	size, err := t.disk.write(j.o)
	leave()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := j.e
	e.writing = false
	if t.byID[e.id] != e {
		// Replaced or removed while queued: the file is no object's (a
		// replacement's own write is queued behind this one).
		t.disk.remove(e.id)
		return
	}
	if err != nil {
		t.writeErrors.Add(1)
		t.cfg.Logger.Warn("cache: could not write an object to disk; kept in memory only", "key", e.meta.Key, "err", err)
		t.disk.remove(e.id)
		// (Failing before Put has set it in memory leaves an unindexed copy
		// there, which nothing finds and the memory tier evicts in time.)
		if _, inMem := t.mem.GetIfPresent(e.id); !inMem {
			t.dropLocked(e, false)
		}
		return
	}
	e.diskSize = size
	e.lru = t.diskLRU.PushFront(e)
	t.diskBytes += size
	t.evictDiskLocked()
}

// Flush waits until the objects stored so far are written to disk.
func (t *Tiers) Flush() {
	if t.writer != nil {
		t.writer.flush()
	}
}

// evictDiskLocked removes the least recently used files beyond the bound;
// one still in memory stays indexed there.
func (t *Tiers) evictDiskLocked() {
	for t.diskBytes > t.cfg.DiskBytes && t.diskLRU.Len() > 0 {
		e := t.diskLRU.Back().Value.(*entry)
		t.disk.remove(e.id)
		t.diskLRU.Remove(e.lru)
		e.lru = nil
		t.diskBytes -= e.diskSize
		t.diskEvictions.Add(1)
		if _, inMem := t.mem.GetIfPresent(e.id); !inMem {
			t.dropLocked(e, false)
		}
	}
}

// Remove deletes every variant of a primary key from both tiers.
func (t *Tiers) Remove(key string) int {
	return t.RemoveIf(func(m *Meta) bool { return m.Key == key })
}

// RemovePrefix deletes every object whose primary key starts with prefix.
func (t *Tiers) RemovePrefix(prefix string) int {
	return t.RemoveIf(func(m *Meta) bool { return strings.HasPrefix(m.Key, prefix) })
}

// RemoveIf deletes every object whose meta matches, in one pass over the
// index, and returns how many it deleted.
func (t *Tiers) RemoveIf(match func(*Meta) bool) int {
	t.mu.Lock()
	var gone []*entry
	for _, vs := range t.byKey {
		for _, e := range vs {
			if match(e.meta) {
				gone = append(gone, e)
			}
		}
	}
	for _, e := range gone {
		t.dropLocked(e, true)
	}
	t.mu.Unlock()
	for _, e := range gone {
		t.mem.Invalidate(e.id)
	}
	return len(gone)
}

// Stats are the tiers' figures.
type Stats struct {
	MemoryBytes   int64 `json:"memory_bytes"`
	MemoryObjects int   `json:"memory_objects"`
	DiskBytes     int64 `json:"disk_bytes"`
	DiskObjects   int   `json:"disk_objects"`
	Objects       int   `json:"objects"`
	Promotions    int64 `json:"promotions"`
	Demotions     int64 `json:"demotions"`
	DiskEvictions int64 `json:"disk_evictions"`
	Corrupt       int64 `json:"corrupt"`
	// DiskInflight is the disk operations in flight and DiskOldest how
	// long the oldest has run; DiskRefused counts the reads refused and
	// DiskSkipped the objects kept in memory only because the disk was
	// busy.
	DiskInflight int           `json:"disk_inflight"`
	DiskOldest   time.Duration `json:"disk_oldest_ns"`
	DiskRefused  int64         `json:"disk_refused"`
	DiskSkipped  int64         `json:"disk_skipped"`
	// WriteQueue and WriteQueueBytes are the objects waiting to be
	// written to disk; WriteErrors counts the writes that failed.
	WriteQueue      int   `json:"write_queue"`
	WriteQueueBytes int64 `json:"write_queue_bytes"`
	WriteErrors     int64 `json:"write_errors"`
}

// Stats returns the tiers' figures now.
func (t *Tiers) Stats() Stats {
	t.mu.Lock()
	s := Stats{DiskBytes: t.diskBytes, DiskObjects: t.diskLRU.Len(), Objects: len(t.byID)}
	t.mu.Unlock()
	s.MemoryBytes, s.MemoryObjects = int64(t.mem.WeightedSize()), t.mem.EstimatedSize()
	s.Promotions, s.Demotions, s.DiskEvictions, s.Corrupt = t.promotions.Load(), t.demotions.Load(), t.diskEvictions.Load(), t.corrupt.Load()
	s.DiskInflight, s.DiskOldest = t.gate.load()
	s.DiskRefused, s.DiskSkipped, s.WriteErrors = t.refused.Load(), t.skipped.Load(), t.writeErrors.Load()
	if t.writer != nil {
		s.WriteQueue, s.WriteQueueBytes = t.writer.queued()
	}
	return s
}

// Close writes the queued objects to disk and stops the tiers'
// goroutines. Every file was complete when it was renamed into place.
func (t *Tiers) Close() {
	if t.writer != nil {
		t.writer.close()
	}
	t.mem.StopAllGoroutines()
}
