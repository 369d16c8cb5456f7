package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// connReport runs a tiny conn-rate with two reps through a redirecting
// front door, the series named policy.
func connReport(t *testing.T, policy, label string) *Report {
	t.Helper()
	a, b := newPageNode(t, 0.5, 1, ""), newPageNode(t, 0.25, 1, "500")
	front := newFrontDoor(t, "", a, b)
	p := connParams(front, 10, a, b)
	p.Policy, p.Label, p.Reps = policy, label, 2
	rep, err := RunConnRate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestConnRateTable(t *testing.T) {
	rep := connReport(t, "static-hash", "2 nodes")
	var buf bytes.Buffer
	if err := WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"mure bench conn-rate — 2 nodes", "url " + rep.URL, "reps 2  closed loop, 10 requests per run",
		"replies/s", "reply ms", "connection ms", "connect ms", "cpu% min", "static-hash",
		"cpu static-hash (mean per node): " + rep.Nodes[0], "served static-hash (10 redirects): " + rep.Nodes[0] + " 10",
		"errors static-hash: http_500 10"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestConnRateJSONAndCombine: the times and CPU series survive a JSON
// round trip, and two policies' reports combine into one chart.
func TestConnRateJSONAndCombine(t *testing.T) {
	dir := t.TempDir()
	var reps []*Report
	for _, policy := range []string{"round-robin", "static-hash"} {
		file := filepath.Join(dir, policy+".json")
		if err := WriteJSON(file, connReport(t, policy, "")); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(file)
		if err != nil {
			t.Fatal(err)
		}
		g := back.Groups[0]
		if g.Conn == nil || g.Conn.Reply.Count != 10 || g.CPU == nil || len(g.CPU.Nodes) != 2 ||
			g.Runs[0].CPU == nil || len(g.Runs[0].CPU.Samples) == 0 || g.Runs[0].Conn.Histograms != nil {
			t.Fatalf("after JSON: %+v", g)
		}
		reps = append(reps, back)
	}
	c, err := Combine(reps)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || c.Groups[0].Series != "#1 round-robin" || c.Groups[1].Series != "#2 static-hash" {
		t.Fatalf("combined series %q, %q", c.Groups[0].Series, c.Groups[1].Series)
	}
	for _, name := range []string{"c.png", "c.svg"} {
		file := filepath.Join(dir, name)
		if err := WriteChart(file, c); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil || len(data) < 1000 {
			t.Fatalf("%s: %d bytes, %v", name, len(data), err)
		}
		if name == "c.svg" && !bytes.Contains(data, []byte("CPU use per node")) {
			t.Fatalf("%s: no CPU panel", name)
		}
	}
}

// TestConnChartWithoutCPU: a report whose nodes could not be polled still
// draws.
func TestConnChartWithoutCPU(t *testing.T) {
	front := newFrontDoor(t, "")
	rep, err := RunConnRate(context.Background(), connParams(front, 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteChart(filepath.Join(t.TempDir(), "c.svg"), rep); err != nil {
		t.Fatal(err)
	}
}
