package node

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/mure-dev/mure/internal/cluster"
)

// SimHost is a simulated host's figures (Config.DebugHostFigures), for
// tests of placement by load on nodes that share one machine: a base, and
// what each session running on the node adds.
type SimHost struct {
	FreeMemory      int64   `json:"free_memory_bytes"`
	CPU             float64 `json:"cpu"`
	RunQueue        float64 `json:"run_queue"`
	SessionMemory   int64   `json:"session_memory_bytes"`
	SessionCPU      float64 `json:"session_cpu"`
	SessionPressure float64 `json:"session_run_queue"`
}

// simulate replaces l's CPU, run queue and free memory with the figures
// file's for node id, if it names it: read at every sample, so a test may
// change them while the node runs. Sessions are counted as the
// directories in dataDir/sessions.
func simulate(l cluster.Load, file, id, dataDir string) cluster.Load {
	b, err := os.ReadFile(file)
	if err != nil {
		return l
	}
	var hosts map[string]SimHost
	if json.Unmarshal(b, &hosts) != nil {
		return l
	}
	h, ok := hosts[id]
	if !ok {
		return l
	}
	ents, _ := os.ReadDir(filepath.Join(dataDir, "sessions"))
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
		}
	}
	k := float64(n)
	l.FreeMemory = max(0, h.FreeMemory-int64(n)*h.SessionMemory)
	l.CPU = h.CPU + k*h.SessionCPU
	l.RunQueue = h.RunQueue + k*h.SessionPressure
	return l
}
