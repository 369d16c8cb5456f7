package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mure-dev/mure/internal/bench"
)

// newConnRateFakes starts a node (a CPU counter on /status, a page on
// /page) and a front door that redirects every request to it; it returns
// the node's address and the front door's page URL.
func newConnRateFakes(t *testing.T) (node, pageURL string) {
	var polls atomic.Int64
	n := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status" {
			fmt.Fprintf(w, `{"host":{"source":"cgroup v2","cpu_seconds":%d,"cpu_quota_cores":1}}`, polls.Add(1))
			return
		}
		fmt.Fprint(w, "0123456789")
	}))
	t.Cleanup(n.Close)
	front := httptest.NewServer(http.RedirectHandler(n.URL+"/page", http.StatusTemporaryRedirect))
	t.Cleanup(front.Close)
	return strings.TrimPrefix(n.URL, "http://"), front.URL + "/page"
}

func TestBenchConnRate(t *testing.T) {
	node, page := newConnRateFakes(t)
	dir := t.TempDir()
	jsonFile, chart := filepath.Join(dir, "rr.json"), filepath.Join(dir, "rr.svg")
	out, errOut, err := runBenchArgs("conn-rate", "--node", node, "--url", page, "--length", "10",
		"--clients", "2", "--count", "8", "--rate", "500", "--policy", "round-robin", "--label", "fake",
		"--json", jsonFile, "--chart", chart)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"mure bench conn-rate — fake", "url " + page, "open loop at 500/s", "round-robin", "replies/s", "reply ms",
		"served round-robin (8 redirects): " + node + " 8"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	rep, err := bench.ReadJSON(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Groups[0]; rep.Scenario != "conn-rate" || g.Series != "round-robin" || g.Errors != 0 || g.Conn.Reply.Count != 8 || g.CPU == nil {
		t.Fatalf("%+v", g)
	}
	// a second policy's report, side by side
	other := filepath.Join(dir, "hash.json")
	if _, errOut, err := runBenchArgs("conn-rate", "--node", node, "--url", page, "--count", "4", "--policy", "static-hash", "--json", other); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	out, errOut, err = runBenchArgs("combine", jsonFile, other, "--chart", filepath.Join(dir, "both.png"))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "fake round-robin") || !strings.Contains(out, "#2 static-hash") {
		t.Errorf("combined:\n%s", out)
	}
}

func TestBenchConnRateUsageErrors(t *testing.T) {
	node, page := newConnRateFakes(t)
	for _, args := range [][]string{
		{"conn-rate"},                       // no --url
		{"conn-rate", "--url", "ftp://x/y"}, // not http
		{"conn-rate", "--url", "/page"},     // not absolute
		{"conn-rate", "--url", page, "--length", "-1"},
		{"conn-rate", "--url", page, "--files", "3"},
		{"small-ops", "--url", page},
		{"small-ops", "--policy", "rr"},
		{"replicated-io", "--length", "10"},
	} {
		args = append([]string{"--node", node, "--duration", "50ms"}, args...)
		if _, errOut, err := runBenchArgs(args...); !errors.Is(err, errUsage) || !strings.Contains(errOut, "usage: mure bench") {
			t.Errorf("%q: err = %v", args, err)
		}
	}
}

func TestTestbedBenchScenarios(t *testing.T) {
	err := runTestbedBench(context.Background(), []string{"small-ops"}, io.Discard, io.Discard)
	if !errors.Is(err, errUsage) {
		t.Fatalf("small-ops on the testbed: %v", err)
	}
	// conn-rate is accepted: what stops it here is the missing testbed
	err = runTestbedBench(context.Background(), []string{"conn-rate", "--dir", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || errors.Is(err, errUsage) {
		t.Fatalf("conn-rate on the testbed: %v", err)
	}
}
