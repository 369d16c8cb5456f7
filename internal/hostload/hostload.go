// Package hostload reads what the host of this process is using: CPU time
// and memory of its own cgroup when it runs in one (an emulated host of the
// testbed, a container), of the machine otherwise. /proc/loadavg,
// /proc/meminfo and /proc/stat are machine-wide even inside a network
// namespace, so a node that reports its load must read its cgroup.
package hostload

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Sample is one reading.
type Sample struct {
	// Source is "cgroup v1", "cgroup v2" or "machine".
	Source string `json:"source"`
	// CPUSeconds is the CPU time used so far (a counter).
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUQuota is the cores the host may use (0: no quota).
	CPUQuota float64 `json:"cpu_quota_cores,omitempty"`
	// CPUThrottledSeconds is the time the host's tasks were held back by
	// its quota so far (a counter; cgroups only).
	CPUThrottledSeconds float64 `json:"cpu_throttled_seconds,omitempty"`
	// MemoryBytes is the memory in use, page cache included; MemoryLimit
	// its limit (0: none).
	MemoryBytes int64 `json:"memory_bytes"`
	MemoryLimit int64 `json:"memory_limit_bytes,omitempty"`
	// PageCacheBytes is the part of MemoryBytes that is file pages (active
	// and inactive): reclaimable, so counted as free (cgroups only).
	PageCacheBytes int64 `json:"page_cache_bytes,omitempty"`
}

// Reader reads samples from the files found by Open.
type Reader struct {
	source              string
	cpuUsage            string // cpuacct.usage (ns) or cpu.stat (usage_usec)
	cpuQuota, cpuPeriod string // v1 quota and period; v2: cpuQuota is cpu.max
	cpuStat             string // throttling counters (v1 cpu.stat; v2 the same file as cpuUsage)
	memUsage, memLimit  string
	memStat             string
	root                string // of /proc

	mu   sync.Mutex
	prev throttling // at the previous RunQueue (v1)
}

// Open finds this process's cgroup files under the usual mounts.
func Open() *Reader { return open("/proc", "/sys/fs/cgroup") }

// open is Open with other roots (tests).
func open(proc, cgroupRoot string) *Reader {
	r := &Reader{source: "machine", root: proc}
	groups, err := readCgroups(filepath.Join(proc, "self", "cgroup"))
	if err != nil {
		return r
	}
	if path, ok := groups[""]; ok && len(groups) == 1 { // unified hierarchy only
		dir := filepath.Join(cgroupRoot, path)
		if path != "/" && exists(filepath.Join(dir, "cpu.stat")) {
			r.source, r.cpuUsage, r.cpuQuota = "cgroup v2", filepath.Join(dir, "cpu.stat"), filepath.Join(dir, "cpu.max")
			r.cpuStat = r.cpuUsage
			r.memUsage, r.memLimit = filepath.Join(dir, "memory.current"), filepath.Join(dir, "memory.max")
			r.memStat = filepath.Join(dir, "memory.stat")
		}
		return r
	}
	cpu, okCPU := groups["cpuacct"]
	mem, okMem := groups["memory"]
	if !okCPU || cpu == "/" { // the root group is the machine
		return r
	}
	r.source = "cgroup v1"
	r.cpuUsage = filepath.Join(cgroupRoot, "cpuacct", cpu, "cpuacct.usage")
	if q, ok := groups["cpu"]; ok {
		r.cpuQuota = filepath.Join(cgroupRoot, "cpu", q, "cpu.cfs_quota_us")
		r.cpuPeriod = filepath.Join(cgroupRoot, "cpu", q, "cpu.cfs_period_us")
		r.cpuStat = filepath.Join(cgroupRoot, "cpu", q, "cpu.stat")
	}
	if okMem {
		r.memUsage = filepath.Join(cgroupRoot, "memory", mem, "memory.usage_in_bytes")
		r.memLimit = filepath.Join(cgroupRoot, "memory", mem, "memory.limit_in_bytes")
		r.memStat = filepath.Join(cgroupRoot, "memory", mem, "memory.stat")
	}
	return r
}

// OwnCgroups maps each cgroup v1 controller of this process (and "" for
// the v2 hierarchy) to its group's path, from /proc/self/cgroup.
func OwnCgroups() (map[string]string, error) { return readCgroups("/proc/self/cgroup") }

// readCgroups maps each v1 controller (and "" for v2) to its path.
func readCgroups(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m, sc.Err()
}

// Read takes a sample.
func (r *Reader) Read() (Sample, error) {
	s := Sample{Source: r.source}
	var err error
	switch r.source {
	case "cgroup v1":
		var ns int64
		ns, err = readInt(r.cpuUsage)
		s.CPUSeconds = float64(ns) / 1e9
		if q, qerr := readInt(r.cpuQuota); qerr == nil && q > 0 {
			if p, perr := readInt(r.cpuPeriod); perr == nil && p > 0 {
				s.CPUQuota = float64(q) / float64(p)
			}
		}
		if r.memUsage != "" {
			s.MemoryBytes, _ = readInt(r.memUsage)
			if l, lerr := readInt(r.memLimit); lerr == nil && l < 1<<60 { // "no limit" is a huge number
				s.MemoryLimit = l
			}
			s.PageCacheBytes = pageCache(r.memStat)
		}
		s.CPUThrottledSeconds = float64(readStat(r.cpuStat)["throttled_time"]) / 1e9
	case "cgroup v2":
		st := readStat(r.cpuStat) // cpu.stat: usage and throttling in one read
		us, ok := st["usage_usec"]
		if !ok {
			err = errors.New(r.cpuStat + ": no usage_usec")
		}
		s.CPUSeconds = float64(us) / 1e6
		s.CPUThrottledSeconds = float64(st["throttled_usec"]) / 1e6
		if f := fields(r.cpuQuota); len(f) == 2 && f[0] != "max" {
			q, _ := strconv.ParseFloat(f[0], 64)
			p, _ := strconv.ParseFloat(f[1], 64)
			if p > 0 {
				s.CPUQuota = q / p
			}
		}
		s.MemoryBytes, _ = readInt(r.memUsage)
		s.MemoryLimit, _ = readInt(r.memLimit) // "max": 0
		s.PageCacheBytes = pageCache(r.memStat)
	default:
		s.CPUSeconds, err = machineCPU(filepath.Join(r.root, "stat"))
		if err == nil {
			s.MemoryBytes, s.MemoryLimit, err = machineMemory(filepath.Join(r.root, "meminfo"))
		}
	}
	if err != nil {
		return s, fmt.Errorf("host load (%s): %w", r.source, err)
	}
	return s, nil
}

// machineCPU sums the CPU time of the first line of /proc/stat (user,
// nice, system, irq, softirq, steal; not idle or iowait), in seconds at
// the usual 100 ticks per second.
func machineCPU(file string) (float64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New(file + ": unexpected first line")
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return float64(ticks) / 100, nil
}

// machineMemory returns MemTotal - MemAvailable and MemTotal.
func machineMemory(file string) (used, total int64, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	var avail int64
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			avail = kb << 10
		}
	}
	return total - avail, total, nil
}

// pageCache returns the file pages (active and inactive) of a cgroup's
// memory.stat: v1's hierarchical total_ figures when present.
func pageCache(file string) int64 {
	st := readStat(file)
	if v, ok := st["total_inactive_file"]; ok {
		return v + st["total_active_file"]
	}
	return st["inactive_file"] + st["active_file"]
}

// readStat reads a flat keyed file ("name value" lines: cpu.stat,
// memory.stat); a missing file gives an empty map.
func readStat(file string) map[string]int64 {
	m := map[string]int64{}
	if file == "" {
		return m
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return m
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				m[k] = n
			}
		}
	}
	return m
}

func readInt(file string) (int64, error) {
	f := fields(file)
	if len(f) == 0 {
		return 0, errors.New(file + ": empty or unreadable")
	}
	return strconv.ParseInt(f[0], 10, 64)
}

func fields(file string) []string {
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}
