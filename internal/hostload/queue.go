package hostload

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// RunQueue returns how much work waits for a CPU on this host, per core:
//   - cgroup v2: the share of the last 10 s in which some task of the
//     cgroup waited for a CPU (cpu.pressure "some avg10", 0..1);
//   - cgroup v1 with a CPU quota: the share of the quota periods since the
//     previous call (since the cgroup began, on the first) in which the
//     host wanted more than its quota and was throttled (cpu.stat
//     nr_throttled over nr_periods, 0..1), v1 having no per-group PSI;
//   - otherwise the machine's 1-minute load average per core.
//
// It returns 0 when none can be read.
func (r *Reader) RunQueue() float64 {
	switch r.source {
	case "cgroup v2":
		if v, ok := pressure(filepath.Join(filepath.Dir(r.cpuUsage), "cpu.pressure")); ok {
			return v
		}
	case "cgroup v1":
		if v, ok := r.throttledShare(); ok {
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

// throttling is a reading of a v1 cgroup's cpu.stat counters.
type throttling struct{ periods, throttled int64 }

// throttledShare returns the share of the quota periods since the previous
// call in which the cgroup was throttled; false when the group has no
// quota or no cpu.stat.
func (r *Reader) throttledShare() (float64, bool) {
	if q, err := readInt(r.cpuQuota); err != nil || q <= 0 {
		return 0, false
	}
	st := readStat(r.cpuStat)
	periods, ok := st["nr_periods"]
	if !ok {
		return 0, false
	}
	cur := throttling{periods: periods, throttled: st["nr_throttled"]}
	r.mu.Lock()
	prev := r.prev
	r.prev = cur
	r.mu.Unlock()
	if cur.periods < prev.periods { // the group was made anew
		prev = throttling{}
	}
	dp := cur.periods - prev.periods
	if dp <= 0 { // no period with a runnable task: nothing waited
		return 0, true
	}
	return min(1, float64(cur.throttled-prev.throttled)/float64(dp)), true
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

// FreeMemory returns the memory this host could still use, in bytes: with
// a cgroup limit, the limit less what is in use, counting the reclaimable
// page cache as free (paper 004's rule); without one, the machine's
// MemAvailable (which counts page cache as free too).
func (r *Reader) FreeMemory(s Sample) int64 {
	if s.Source != "machine" && s.MemoryLimit > 0 {
		return min(s.MemoryLimit, max(0, s.MemoryLimit-s.MemoryBytes+s.PageCacheBytes))
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
