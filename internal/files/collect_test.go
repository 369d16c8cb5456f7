package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// TestDeletedSpaceComesBack: a file deleted soon after it was written
// leaves no blob on disk once the blobs' protection ends, without waiting
// for the path to change again: the writer's own copy once this node has
// applied its commit (decision 0063), a standby copy pushed here after
// twice the write timeout. Both stayed on disk until the path was written
// again (paper 002's runs met 507 no_space).
func TestDeletedSpaceComesBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pushed bool // a pushed copy of another version is here too
		// overwritten: the file is written again, once the first
		// version's protection ended, instead of deleted; the first
		// version's blob goes (the second's, current, stays)
		overwritten bool
		// a pushed copy's protection is twice the write timeout: it goes
		// once that has ended; the writer's own goes once its commit is
		// applied, long before a minute's timeout
		writeTimeout time.Duration
	}{
		{"the writer's copy", false, false, 300 * time.Millisecond},
		{"the writer's copy, at the delete", false, false, time.Minute},
		{"a pushed copy still protected", true, false, 300 * time.Millisecond},
		{"an overwritten version", false, true, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a")
			c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
			s := c.svcs["a"]
			s.cfg.WriteTimeout = tc.writeTimeout
			s.Start()
			t.Cleanup(func() { s.Close() })
			path := "del/f"
			if _, err := c.put("a", path, "some bytes", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.pushed {
				sum := sha256.Sum256([]byte("other"))
				if err := s.StoreBlob(BlobRef{Path: path, ID: newBlobID(), Sum: hex.EncodeToString(sum[:]), Size: 5}, strings.NewReader("other")); err != nil {
					t.Fatal(err)
				}
			}
			want := 0
			if tc.overwritten {
				// The first version's protection ends before the second
				// write: only the second's blob is protected then, also
				// at the release of the write right, made at once.
				c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgResume, Value: "immediate"})
				protected := func() bool {
					kept, _ := s.protect.keep(path, []string{s.fsm.File(path).BlobID}, "", 0)
					return len(kept) > 0
				}
				for deadline := time.Now().Add(5 * time.Second); protected(); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the first version's blob still protected after 5 s")
					}
				}
				if _, err := c.put("a", path, "other bytes", PutOptions{}); err != nil {
					t.Fatal(err)
				}
				want = 1
			} else if err := s.Delete(context.Background(), path, DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				ids, err := s.st.IDs(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("blobs %v of the file are still on disk after 5 s, want %d", ids, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
