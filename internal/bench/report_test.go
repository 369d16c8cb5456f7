package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleReport runs a tiny replicated-io with two set kinds and two reps.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	f := newFakeNode(t)
	p := tinyIO([]string{f.addr()}, []string{"read", "write"}, []string{"own", "common"})
	p.Reps, p.Label = 2, "fake node"
	rep, err := RunReplicatedIO(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestJSONRoundTrip(t *testing.T) {
	rep := sampleReport(t)
	file := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(file, rep); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(file)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(back)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	if back.Scenario != "replicated-io" || back.Label != "fake node" || len(back.Groups) != 8 ||
		back.Groups[0].Runs[0].Latency != rep.Groups[0].Runs[0].Latency || !back.Started.Equal(rep.Started) {
		t.Fatalf("%+v", back)
	}
	if _, err := ReadJSON(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file read")
	}
}

func TestSpread(t *testing.T) {
	s := spreadOf([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.Mean != 5 || s.Min != 2 || s.Max != 9 || math.Abs(s.Stddev-2.138) > 0.001 {
		t.Fatalf("%+v", s)
	}
	if s := spreadOf([]float64{3}); s != (Spread{Mean: 3, Min: 3, Max: 3}) {
		t.Fatalf("%+v", s)
	}
}

func TestChart(t *testing.T) {
	rep := sampleReport(t)
	dir := t.TempDir()
	for _, name := range []string{"c.png", "c.svg"} {
		file := filepath.Join(dir, name)
		if err := WriteChart(file, rep); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil || len(data) < 1000 {
			t.Fatalf("%s: %d bytes, %v", name, len(data), err)
		}
		if strings.HasSuffix(name, ".png") && !bytes.HasPrefix(data, []byte("\x89PNG")) ||
			strings.HasSuffix(name, ".svg") && !bytes.Contains(data, []byte("<svg")) {
			t.Fatalf("%s: wrong format", name)
		}
	}
	if err := WriteChart(filepath.Join(dir, "c.gif"), rep); err == nil {
		t.Fatal("gif accepted")
	}
	if err := WriteChart(filepath.Join(dir, "e.png"), &Report{}); err == nil {
		t.Fatal("empty report drawn")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d files left in %s", len(entries), dir)
	}
}

func TestTable(t *testing.T) {
	rep := sampleReport(t)
	rep.Groups[0].ErrorKinds = map[string]int64{"http_503": 2, KindTransport: 1}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"mure bench replicated-io — fake node", "clients 2  files 3  reps 2  closed loop, 20 requests per run",
		"MB/s", "p99.9", "read own", "write common", "4K", "errors read own 1K: http_503 2, transport 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 2+1+8+1+1 {
		t.Errorf("%d lines:\n%s", lines, out)
	}
}
