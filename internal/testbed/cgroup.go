package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/hostload"
)

const cgroupRoot = "/sys/fs/cgroup"

// cfsPeriod is the CPU scheduler's accounting period of a host, in µs.
const cfsPeriod = 10000

// Cgroup is one host's control groups: a directory per hierarchy (v1) or
// one directory (v2). CPU is where the quota is set, Memory where memory
// is limited and accounted.
type Cgroup struct {
	Dirs   []string `json:"dirs"`
	CPU    string   `json:"cpu"`
	Memory string   `json:"memory,omitempty"`
	V2     bool     `json:"v2,omitempty"`
}

// isV2 reports whether the machine runs the unified hierarchy only.
func isV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// newCgroup creates the cgroups of a host named name with a CPU quota of
// cores and, when memMB > 0, a memory limit. On v1 they are made under
// this process's own cgroups, so that the machine's limits still apply.
func newCgroup(name string, cores float64, memMB int) (*Cgroup, error) {
	cg := &Cgroup{}
	// A short period spreads the quota: with the default 100 ms, a host at
	// 0.2 core would run 20 ms and then stall 80 ms, which no real CPU does
	// and which leaves its link idle.
	quota := max(int64(cores*cfsPeriod), 1000)
	if isV2() {
		cg.V2 = true
		// enabling controllers for children is allowed at the root
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu +memory +io"), 0o644)
		dir := filepath.Join(cgroupRoot, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		cg.Dirs, cg.CPU, cg.Memory = []string{dir}, dir, dir
		err := os.WriteFile(filepath.Join(dir, "cpu.max"), fmt.Appendf(nil, "%d %d", quota, cfsPeriod), 0o644)
		if err == nil && memMB > 0 {
			err = os.WriteFile(filepath.Join(dir, "memory.max"), fmt.Appendf(nil, "%d", int64(memMB)<<20), 0o644)
		}
		if err != nil {
			cg.remove(context.Background())
			return nil, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		return cg, nil
	}
	own, err := hostload.OwnCgroups()
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	seen := map[string]bool{}
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		mount, err := filepath.EvalSymlinks(filepath.Join(cgroupRoot, ctrl))
		if err != nil {
			if ctrl == "cpu" {
				return nil, fmt.Errorf("no cgroup v1 cpu hierarchy under %s: %w", cgroupRoot, err)
			}
			continue
		}
		dir := filepath.Join(mount, own[ctrl], name)
		if !seen[dir] {
			seen[dir] = true
			if err := os.Mkdir(dir, 0o755); err != nil {
				cg.remove(context.Background())
				return nil, fmt.Errorf("cgroup %s: %w", dir, err)
			}
			cg.Dirs = append(cg.Dirs, dir)
		}
		switch ctrl {
		case "cpu":
			cg.CPU = dir
		case "memory":
			cg.Memory = dir
		}
	}
	err = os.WriteFile(filepath.Join(cg.CPU, "cpu.cfs_period_us"), []byte(strconv.Itoa(cfsPeriod)), 0o644)
	if err == nil {
		err = os.WriteFile(filepath.Join(cg.CPU, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0o644)
	}
	if err == nil && memMB > 0 && cg.Memory != "" {
		err = os.WriteFile(filepath.Join(cg.Memory, "memory.limit_in_bytes"), fmt.Appendf(nil, "%d", int64(memMB)<<20), 0o644)
	}
	if err != nil {
		cg.remove(context.Background())
		return nil, fmt.Errorf("cgroup %s: %w", name, err)
	}
	return cg, nil
}

// joinScript is a shell prefix that moves the shell into the host's
// cgroups before it execs the real command, so that nothing of the host
// ever runs outside them.
func (cg *Cgroup) joinScript() string {
	var b strings.Builder
	for _, d := range cg.Dirs {
		fmt.Fprintf(&b, "echo $$ > %s/cgroup.procs && ", d)
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

// procs returns the PIDs in the host's cgroups.
func (cg *Cgroup) procs() []int {
	var pids []int
	for _, d := range cg.Dirs {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// remove kills whatever still runs in the cgroups, waits for them to be
// empty and deletes them.
func (cg *Cgroup) remove(ctx context.Context) error {
	var errs []error
	for _, d := range cg.Dirs {
		if err := removeCgroupDir(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeCgroupDir(ctx context.Context, dir string) error {
	// Groups made inside a host's go first (a node's sessions' groups,
	// mure-sessions/ID): a cgroup with children cannot be removed.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupDir(ctx, filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		for _, pid := range (&Cgroup{Dirs: []string{dir}}).procs() {
			_ = killPID(pid)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Usage is what a host's cgroup has measured.
type Usage struct {
	CPUSeconds float64 `json:"cpu_s"`
	// ThrottledSeconds is the time the quota held the host back.
	ThrottledSeconds float64 `json:"throttled_s"`
	// MemoryBytes is the memory in use, page cache included; PageCacheBytes
	// the file pages among it.
	MemoryBytes    int64 `json:"memory_bytes"`
	PageCacheBytes int64 `json:"page_cache_bytes"`
}

// usage reads the host's CPU time and memory in use.
func (cg *Cgroup) usage() (Usage, error) {
	var u Usage
	if cg.V2 {
		st, err := os.ReadFile(filepath.Join(cg.CPU, "cpu.stat"))
		if err != nil {
			return u, err
		}
		u.CPUSeconds = float64(statField(st, "usage_usec")) / 1e6
		u.ThrottledSeconds = float64(statField(st, "throttled_usec")) / 1e6
		u.MemoryBytes = readInt(filepath.Join(cg.Memory, "memory.current"))
		u.PageCacheBytes = statField(readFile(filepath.Join(cg.Memory, "memory.stat")), "file")
		return u, nil
	}
	for _, d := range cg.Dirs {
		if ns := readInt(filepath.Join(d, "cpuacct.usage")); ns > 0 {
			u.CPUSeconds = float64(ns) / 1e9
		}
	}
	u.ThrottledSeconds = float64(statField(readFile(filepath.Join(cg.CPU, "cpu.stat")), "throttled_time")) / 1e9
	if cg.Memory != "" {
		u.MemoryBytes = readInt(filepath.Join(cg.Memory, "memory.usage_in_bytes"))
		u.PageCacheBytes = statField(readFile(filepath.Join(cg.Memory, "memory.stat")), "cache")
	}
	return u, nil
}

// statField returns one field of a flat keyed cgroup file's contents
// (cpu.stat, memory.stat); 0 when it is missing.
func statField(data []byte, key string) int64 {
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// readFile returns a file's contents; none when it cannot be read.
func readFile(file string) []byte {
	data, _ := os.ReadFile(file)
	return data
}

func readInt(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return v
}
