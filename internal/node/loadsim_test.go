package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mure-dev/mure/internal/cluster"
)

func TestSimulatedFigures(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts.json")
	b, _ := json.Marshal(map[string]SimHost{"n1": {FreeMemory: 1000, CPU: 0.2, RunQueue: 0.1, SessionMemory: 300, SessionCPU: 0.1, SessionPressure: 0.05}})
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, "sessions", s), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	real := cluster.Load{Connections: 7, CPU: 0.9, FreeMemory: 5}
	got := simulate(real, file, "n1", dir)
	if got.FreeMemory != 400 || got.CPU != 0.4 || got.RunQueue != 0.2 || got.Connections != 7 {
		t.Errorf("two sessions on n1: %+v", got)
	}
	if got := simulate(real, file, "n2", dir); got != real {
		t.Errorf("a node the file does not name: %+v, want its real figures", got)
	}
	if got := simulate(real, filepath.Join(dir, "none"), "n1", dir); got != real {
		t.Errorf("no file: %+v", got)
	}
}
