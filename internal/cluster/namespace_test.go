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
