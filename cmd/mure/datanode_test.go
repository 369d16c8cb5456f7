package main

import (
	"io"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// A client given a node's data directory and no --node talks to that
// node at the address it recorded there, wherever it listens (the test
// node is not on the default 127.0.0.1:7946); --node and MURE_NODE win.
func TestDataDirFindsItsNode(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Auth = node.AuthConfig{HashParams: auth.TestHashParams()}
	}})
	nd := c.Nodes[0]
	for _, k := range []string{"MURE_NODE", "MURE_TOKEN", "MURE_USER", "MURE_PASSWORD", "MURE_DATA"} {
		t.Setenv(k, "")
	}
	if got, want := node.ReadClientURL(nd.Dir), "http://"+c.HTTPAddr(0); got != want {
		t.Fatalf("recorded client URL %q, want %q", got, want)
	}
	out, err := run(t, runWhoami, "--data", nd.Dir)
	if err != nil || !strings.HasPrefix(out, "admin (admin) via token node-") {
		t.Fatalf("whoami with --data and no --node: %q %v", out, err)
	}
	nodes := func(args ...string) string {
		fs, cf := newFlagSet("x", "", "", io.Discard)
		if _, err := parseArgs(fs, args); err != nil {
			t.Fatal(err)
		}
		return cf.nodeList()
	}
	if got := nodes("--data", nd.Dir, "--node", "10.0.0.1:7946"); got != "10.0.0.1:7946" {
		t.Fatalf("--node with --data: %q", got)
	}
	if got := nodes(); got != "127.0.0.1:7946" {
		t.Fatalf("neither: %q", got)
	}
	t.Setenv("MURE_NODE", "10.0.0.2:7946")
	if got := nodes("--data", nd.Dir); got != "10.0.0.2:7946" {
		t.Fatalf("MURE_NODE with --data: %q", got)
	}
}
