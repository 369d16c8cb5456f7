//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestProcLostDataDir: with k = 2 copies on 4 node processes, a node is
// killed (kill -9) and its data directory deleted, as when a disk dies.
// Every acknowledged write still reads back from the others, and once the
// node is removed every file is back at two copies.
func TestProcLostDataDir(t *testing.T) {
	c := testcluster.StartProc(t, 4)
	ctx := procCtx(t, 90*time.Second)
	for k, v := range map[string]string{"replication": "2", "resume": "immediate"} {
		if _, err := c.Client(0).SetConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	for i := range 40 {
		path := fmt.Sprintf("disk/%02d", i)
		body := fmt.Sprintf("%s-via-node-%d", path, i%4) // short: putRetry puts it in the idempotency key
		if _, err := putRetry(ctx, c.Client(i%4), path, body); err != nil {
			t.Fatal(err)
		}
		files[path] = body
	}
	testcluster.WaitFor(t, 30*time.Second, "every file at two copies", func() bool { return underReplicated(ctx, c, 0) == 0 })

	// The victim: the node holding the most copies.
	copies := map[string]int{}
	for path := range files {
		st, err := fileStatus(ctx, c, 0, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range st.Valid {
			copies[id]++
		}
	}
	victim := 0
	for i := range 4 {
		if copies[c.ID(i)] > copies[c.ID(victim)] {
			victim = i
		}
	}
	victimID := c.ID(victim)
	t.Logf("killing node %d (%s), which holds %d of %d files, and deleting its data directory", victim, victimID, copies[victimID], len(files))
	c.Kill(victim)
	wipeDataDir(t, c.Dir(victim))

	var survivors []int
	for i := range 4 {
		if i != victim {
			survivors = append(survivors, i)
		}
	}
	for _, i := range survivors {
		cl := c.Client(i)
		for path, want := range files {
			got, err := readRetry(ctx, cl, path)
			if err != nil || got != want {
				t.Fatalf("node %d: %s after the loss of node %d's disk: %d bytes, %v; want %d bytes", i, path, victim, len(got), err, len(want))
			}
		}
	}

	// Removed for good: the files it held get their second copy back.
	start := time.Now()
	cl := c.Client(survivors...)
	testcluster.WaitFor(t, 30*time.Second, "node remove to accept the dead node", func() bool {
		return cl.RemoveNode(ctx, victimID) == nil
	})
	testcluster.WaitFor(t, 60*time.Second, "every file at two copies on the survivors", func() bool {
		if underReplicated(ctx, c, survivors[0]) != 0 {
			return false
		}
		for path := range files {
			st, err := fileStatus(ctx, c, survivors[0], path)
			if err != nil || len(st.Valid) < 2 || slices.Contains(st.Valid, victimID) {
				return false
			}
		}
		return true
	})
	t.Logf("back at two copies %v after the removal", time.Since(start).Round(10*time.Millisecond))
	for path, want := range files {
		mustGet(t, c.Client(survivors...), path, want)
	}
}

// wipeDataDir deletes everything a node keeps in dir (its log, written by
// the test harness into the same directory, stays for diagnosis).
func wipeDataDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "mure.log" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// readRetry reads path, retrying while the cluster answers unavailable
// (it may be electing a leader after the kill).
func readRetry(ctx context.Context, cl *client.Client, path string) (string, error) {
	for {
		got, err := readAll(ctx, cl, path)
		if err == nil || ctx.Err() != nil || !errors.Is(err, client.ErrUnavailable) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// underReplicated is node i's count of files below their replica target
// (-1 if it does not answer).
func underReplicated(ctx context.Context, c *testcluster.ProcCluster, i int) int {
	raw, err := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithAttempts(1)).Status(ctx)
	if err != nil {
		return -1
	}
	var st struct {
		Files struct {
			UnderReplicated int `json:"under_replicated"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return -1
	}
	return st.Files.UnderReplicated
}
