package sessionhttp

import (
	"testing"

	"github.com/mure-dev/mure/internal/webbuild"
)

// The committed assets of the browser terminal are what its lockfile
// builds (scripts/web-build.sh).
func TestTermBuildMatches(t *testing.T) {
	webbuild.Check(t, "../../../scripts/web-build.sh", "web")
}

func TestTickets(t *testing.T) {
	var ts tickets
	tk := ts.issue("alice", "s1")
	if _, ok := ts.take(tk, "s2"); ok {
		t.Fatal("a ticket for s1 opened s2")
	}
	tk = ts.issue("alice", "s1")
	if u, ok := ts.take(tk, "s1"); !ok || u != "alice" {
		t.Fatalf("take: %q %v", u, ok)
	}
	if _, ok := ts.take(tk, "s1"); ok {
		t.Fatal("a ticket was good twice")
	}
}
