package hostload

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// RunQueue returns how much work waits for a CPU on this host, per core:
// with cgroup v2, the share of the last 10 s in which some task of the
// cgroup waited for a CPU (cpu.pressure "some avg10", 0..1); otherwise the
// machine's 1-minute load average per core. It returns 0 when neither can
// be read.
func (r *Reader) RunQueue() float64 {
	if r.source == "cgroup v2" {
		if v, ok := pressure(filepath.Join(filepath.Dir(r.cpuUsage), "cpu.pressure")); ok {
			return v
		}
	}
	data, err := os.ReadFile(filepath.Join(r.root, "loadavg"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v / float64(runtime.NumCPU())
}

// pressure reads "some avg10=X" of a PSI file, as a fraction.
func pressure(file string) (float64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(line, "some ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(kv, "avg10="); ok {
				x, err := strconv.ParseFloat(v, 64)
				return x / 100, err == nil
			}
		}
	}
	return 0, false
}

// FreeMemory returns the memory this host could still use, in bytes: its
// cgroup's limit less its use when it has a limit, else the machine's
// MemAvailable (page cache counted as free).
func (r *Reader) FreeMemory(s Sample) int64 {
	if s.Source != "machine" && s.MemoryLimit > 0 {
		return max(0, s.MemoryLimit-s.MemoryBytes)
	}
	if s.Source == "machine" {
		return s.MemoryLimit - s.MemoryBytes
	}
	used, total, err := machineMemory(filepath.Join(r.root, "meminfo"))
	if err != nil {
		return 0
	}
	return total - used
}
