package cluster

import (
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// A proposal names the core version that introduced what it carries, so
// the leader refuses it while a voter cannot apply it.
func TestProposalNamespace(t *testing.T) {
	cases := []struct {
		name string
		cmd  meta.Command
		want int
	}{
		{"a classic commit", meta.Command{Kind: meta.KindCommit, Path: "p"}, 1},
		{"a commit that takes the right", meta.Command{Kind: meta.KindCommit, Take: true}, 2},
		{"a commit with an MD5", meta.Command{Kind: meta.KindCommit, MD5: "00"}, 3},
		{"a taking commit with attributes", meta.Command{Kind: meta.KindCommit, Take: true, Attrs: &meta.Attrs{ContentType: "a/b"}}, 3},
		{"a delete", meta.Command{Kind: meta.KindDelete}, 1},
		{"a replica report", meta.Command{Kind: meta.KindReplica, Path: "p"}, 1},
		{"replica reports of many files", meta.Command{Kind: meta.KindReplicas, Items: []meta.Item{{Path: "p"}}}, 5},
		{"releases of many files", meta.Command{Kind: meta.KindReleases, Items: []meta.Item{{Path: "p"}}}, 5},
		{"settles of many versions", meta.Command{Kind: meta.KindSettles, Items: []meta.Item{{Path: "p"}}}, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, v := proposal{cmd: &tc.cmd}.namespace()
			if ns != meta.NSCore || v != tc.want {
				t.Fatalf("namespace %s v%d, want core v%d", ns, v, tc.want)
			}
		})
	}
}

// A Commit is written in binary only when the leader found every voter
// reading it (core v7); other commands stay JSON either way.
func TestProposalEncoding(t *testing.T) {
	commit := &meta.Command{Kind: meta.KindCommit, Take: true, Path: "p", Node: "n1", BlobID: "b"}
	settle := &meta.Command{Kind: meta.KindSettle, Path: "p", Version: 3}
	for _, tc := range []struct {
		p     proposal
		first byte
	}{
		{proposal{cmd: commit, binary: true}, 0x02},
		{proposal{cmd: commit}, '{'},
		{proposal{cmd: settle, binary: true}, '{'},
	} {
		b, err := tc.p.encode()
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != tc.first {
			t.Errorf("%s (binary %v) encoded as %q, want first byte %q", tc.p, tc.p.binary, b, tc.first)
		}
		if c, err := meta.DecodeCommand(b); err != nil || c.Kind != tc.p.cmd.Kind || c.Path != "p" {
			t.Errorf("%s decoded as %+v, %v", tc.p, c, err)
		}
	}
}
