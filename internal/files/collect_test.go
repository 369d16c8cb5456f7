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
// leaves no blob on disk once the blobs' protection (twice the write
// timeout) ends, without waiting for the path to change again: the
// writer's own copy and a standby copy pushed here. Both stayed on disk
// until the path was written again (paper 002's runs met 507 no_space).
func TestDeletedSpaceComesBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pushed bool // a pushed copy of another version is here too
		// protection is twice the write timeout: the copies go once it
		// has ended
		writeTimeout time.Duration
	}{
		{"the writer's copy", false, 300 * time.Millisecond},
		{"a pushed copy still protected", true, 300 * time.Millisecond},
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
			if err := s.Delete(context.Background(), path, DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				ids, err := s.st.IDs(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("blobs %v of the deleted file are still on disk after 5 s", ids)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
