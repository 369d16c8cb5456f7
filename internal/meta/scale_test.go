package meta

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { return nil }
func (m *memSink) Close() error  { return nil }

// BenchmarkCatalogueScale measures the catalogue's memory and snapshot for
// MURE_SCALE_FILES files (default 100,000), each written once with a
// standby and replicated to three nodes, as a 3-node cluster would hold
// them, with an MD5 and a content type as S3 writes carry (each command is
// decoded on its own, as commands arriving through raft are); and the memory of the same catalogue restored from the snapshot
// (a follower's, after a snapshot install or a restart). Run: MURE_SCALE_FILES=1000000 go test ./internal/meta -run XXX
// -bench CatalogueScale -benchtime 1x
func BenchmarkCatalogueScale(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MURE_SCALE_FILES")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		m := NewFSM()
		idx := uint64(0)
		apply := func(c Command) {
			idx++
			data, _ := c.Encode()
			m.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data})
		}
		for _, id := range []string{"n1", "n2", "n3"} {
			apply(Command{Kind: KindNodeUpsert, Info: &Node{ID: id, State: NodeActive}})
		}
		now := time.Now()
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("users/%04d/photos/%08d.jpg", i%9973, i)
			apply(Command{Kind: KindAcquire, Path: p, Node: "n1"})
			grant := idx
			apply(Command{Kind: KindCommit, Path: p, Node: "n1", Grant: grant, BlobID: fmt.Sprintf("%024x", i),
				Size: 4096, Sum: fmt.Sprintf("%064x", i), Time: now, Standby: []string{"n2"}, Idem: fmt.Sprintf("%032x", i),
				MD5: fmt.Sprintf("%032x", i), Attrs: &Attrs{ContentType: "image/jpeg"}})
			apply(Command{Kind: KindSettle, Path: p, Version: idx})
			apply(Command{Kind: KindRelease, Path: p, Node: "n1", Grant: grant})
			apply(Command{Kind: KindReplica, Path: p, Node: "n3", Version: grant + 1})
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap := after.HeapAlloc - before.HeapAlloc
		start := time.Now()
		snap, err := m.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		var sink memSink
		if err := snap.Persist(&sink); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&before)
		restored := NewFSM()
		rstart := time.Now()
		if err := restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
			b.Fatal(err)
		}
		rtook := time.Since(rstart)
		runtime.GC()
		runtime.ReadMemStats(&after)
		restoredHeap := after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(restored)
		b.ReportMetric(float64(heap)/float64(n), "heap-B/file")
		b.ReportMetric(float64(restoredHeap)/float64(n), "restored-heap-B/file")
		b.ReportMetric(float64(sink.Len())/float64(n), "snapshot-B/file")
		b.ReportMetric(took.Seconds(), "snapshot-s")
		b.ReportMetric(rtook.Seconds(), "restore-s")
		b.ReportMetric(float64(n), "files")
		runtime.KeepAlive(m)
	}
}
