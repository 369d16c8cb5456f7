package files

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// One round's copies go in jobs: small blobs of one source in batches
// bounded in count and bytes, large ones and other sources apart.
func TestFetchJobs(t *testing.T) {
	small := func(n int, size int64) []*meta.File {
		var fs []*meta.File
		for i := range n {
			fs = append(fs, &meta.File{Path: fmt.Sprint("s", i), Size: size})
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		wants []fetchJob
		want  []string // per job: source and count
	}{
		{"one source", []fetchJob{{"a", small(3, 4<<10)}}, []string{"a3"}},
		{"two sources", []fetchJob{{"a", small(2, 4<<10)}, {"b", small(1, 4<<10)}, {"a", small(1, 4<<10)}}, []string{"a3", "b1"}},
		{"large alone", []fetchJob{{"a", small(1, batchBlobMax+1)}, {"a", small(2, batchBlobMax)}}, []string{"a1", "a2"}},
		{"count bound", []fetchJob{{"a", small(MaxFetchBatch+1, 1)}}, []string{fmt.Sprint("a", MaxFetchBatch), "a1"}},
		{"bytes bound", []fetchJob{{"a", small(batchBytes/batchBlobMax+1, batchBlobMax)}}, []string{fmt.Sprint("a", batchBytes/batchBlobMax), "a1"}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, j := range fetchJobs(tc.wants) {
				got = append(got, fmt.Sprint(j.source, len(j.files)))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("jobs %v, want %v", got, tc.want)
			}
		})
	}
}

// A job of several small copies is one batch fetch: the blobs not here
// already are fetched together and each copy is reported; a blob the
// source does not have, or whose bytes fail their SHA-256, fails alone.
func TestResumeReplicasInOneFetch(t *testing.T) {
	c := newFakeCluster(t, "a", "b")
	c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
	var job fetchJob
	job.source = "a"
	for i := range 4 {
		p := fmt.Sprint("f", i)
		if _, err := c.put("a", p, "content of "+p, PutOptions{}); err != nil {
			t.Fatal(err)
		}
		f := c.fsms["a"].File(p)
		c.apply(meta.Command{Kind: meta.KindRelease, Path: p, Node: "a", Grant: f.Grant})
		job.files = append(job.files, c.fsms["b"].File(p))
	}
	a, b := c.svcs["a"], c.svcs["b"]
	ctx := context.Background()
	// f0 is here already (a standby copy, say); f3's blob is gone from a.
	if err := b.fetchReplica(ctx, job.files[0], "a"); err != nil {
		t.Fatal(err)
	}
	if err := a.st.Remove("f3", job.files[3].BlobID); err != nil {
		t.Fatal(err)
	}
	// f1's blob on a holds other bytes of the same size: b's check of
	// its SHA-256 fails that copy alone.
	if err := a.st.Remove("f1", job.files[1].BlobID); err != nil {
		t.Fatal(err)
	}
	w, err := a.st.Create("f1", job.files[1].BlobID)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("CONTENT OF F1"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	fetched := 0
	errs := b.resumeReplicas(ctx, job, func() { fetched++ })
	for i, err := range errs {
		if (err != nil) != (i == 1 || i == 3) || i == 3 && !errors.Is(err, errNotSent) || i == 1 && errors.Is(err, errNotSent) {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	if ids, _ := b.st.IDs("f1"); len(ids) != 0 {
		t.Fatalf("the damaged copy of f1 was stored on b: %v", ids)
	}
	if fetched != 1 || !slices.Equal(c.fetchBatches, []int{3}) {
		t.Fatalf("fetched called %d times, batches %v; want once, [3]", fetched, c.fetchBatches)
	}
	for i, f := range job.files {
		if valid := c.fsms["b"].File(f.Path).IsValidOn("b"); valid != (i == 0 || i == 2) {
			t.Fatalf("%s valid on b: %v", f.Path, valid)
		}
	}
	got, _, err := c.read("b", "f2", OpenOptions{})
	if err != nil || got != "content of f2" {
		t.Fatalf("read f2 on b: %q, %v", got, err)
	}
}
