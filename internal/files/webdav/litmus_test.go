package webdav_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// litmusFloor is how many tests of each litmus suite pass against a node
// (docs/access.md lists the rest and why); a suite that passes fewer
// fails this test.
var litmusFloor = []struct {
	suite       string
	pass, ofRun int
}{
	{"basic", 16, 16},
	{"copymove", 13, 13},
	{"props", 29, 30},
	{"locks", 32, 34},
	{"http", 4, 4},
}

var litmusSummary = regexp.MustCompile("summary for `([a-z]+)': of ([0-9]+) tests run: ([0-9]+) passed")

// Debian's litmus, the WebDAV server test suite, against a real node as
// a user with a password (Basic, from loopback).
func TestLitmus(t *testing.T) {
	bin, err := exec.LookPath("litmus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("litmus is not installed (scripts/test.sh installs it)")
		}
		t.Skip("litmus is not installed: apt-get install litmus (scripts/test.sh does)")
	}
	c, _ := davCluster(t, 1)
	alice := davOf(t, c, 0, "alice", alicePassword)
	alice.want(http.StatusCreated, "MKCOL", "/photos/", "")
	url := alice.base + "/photos/"
	for _, f := range litmusFloor {
		t.Run(f.suite, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, url, "alice", alicePassword)
			cmd.Dir = t.TempDir() // litmus writes debug.log here
			cmd.Env = append(os.Environ(), "TESTS="+f.suite)
			out, _ := cmd.CombinedOutput() // it exits non-zero when a test fails
			m := litmusSummary.FindSubmatch(out)
			if m == nil || string(m[1]) != f.suite {
				t.Fatalf("no summary for %s in litmus's output:\n%s", f.suite, out)
			}
			run, _ := strconv.Atoi(string(m[2]))
			pass, _ := strconv.Atoi(string(m[3]))
			t.Logf("litmus %s: %d of %d passed", f.suite, pass, run)
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "FAIL") || strings.Contains(line, "WARNING") {
					t.Logf("  %s", strings.TrimSpace(line))
				}
			}
			if pass < f.pass || run < f.ofRun {
				t.Fatalf("litmus %s: %d of %d passed, want at least %d of %d:\n%s", f.suite, pass, run, f.pass, f.ofRun, out)
			}
		})
	}
}
