package tier

import (
	"os"
	"strings"
	"sync"
	"testing"
)

// TestWriteQueue: Put returns while the disk is stuck; beyond the queue's
// bound objects stay in memory only; an object replaced or removed while
// its write waited leaves no file behind.
func TestWriteQueue(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unstick := func() { once.Do(func() { close(release) }) }
	tr := open(t, Config{Dir: t.TempDir(), WriteQueue: 2500, DiskLatency: 1 << 62, BeforeDiskIO: func() { <-release }})
	t.Cleanup(unstick) // before Close, which drains the queue
	body := strings.Repeat("q", 1000)
	for _, k := range []string{"a", "b", "c"} { // a and b queued (or being written); c finds the queue full
		if err := tr.Put(object(k, body)); err != nil {
			t.Fatal(err)
		}
	}
	if st := tr.Stats(); st.DiskSkipped != 1 || st.Objects != 3 || st.WriteQueue != 2 {
		t.Errorf("with the disk stuck: %+v; want 2 queued, 1 skipped, 3 objects", st)
	}
	tr.Put(object("b", "replaced while queued"))
	tr.Remove("a")
	unstick()
	tr.Flush()
	st := tr.Stats()
	if st.DiskObjects != 1 || st.WriteQueue != 0 || st.Objects != 2 {
		t.Errorf("after the disk caught up: %+v; want the new b on disk, c in memory", st)
	}
	for k, want := range map[string]bool{"a": false, "b": true, "c": false} {
		_, err := os.Stat(tr.disk.path(object(k, "").ID()))
		if (err == nil) != want {
			t.Errorf("file of %s exists %v, want %v", k, err == nil, want)
		}
	}
	if o, err := get(t, tr, "b"); err != nil || string(o.Body) != "replaced while queued" {
		t.Errorf("b: %v %+v", err, o)
	}
}
