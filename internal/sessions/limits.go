package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Cgroups sets a session's limits with cgroups: one group per session
// under Root's hierarchies (cgroup v2's unified one, or v1's memory, cpu
// and pids). A nil *Cgroups sets none.
type Cgroups struct {
	// Root is the cgroup file system (/sys/fs/cgroup).
	Root string
	// V2 is the unified hierarchy; else v1's per-controller ones.
	V2 bool
}

// cgroupParent is the group under which each session gets its own.
const cgroupParent = "mure-sessions"

// DetectCgroups returns the node's cgroups if it may create groups there,
// else nil (limits are then not enforced; the log says so).
func DetectCgroups() *Cgroups {
	root := "/sys/fs/cgroup"
	c := &Cgroups{Root: root}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		c.V2 = true
		_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0o644)
	}
	for _, d := range c.dirs("probe") {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil
		}
		_ = os.Remove(d)
	}
	return c
}

func (c *Cgroups) dirs(id string) []string {
	if c.V2 {
		return []string{filepath.Join(c.Root, cgroupParent, id)}
	}
	var ds []string
	for _, ctl := range []string{"memory", "cpu", "pids"} {
		ds = append(ds, filepath.Join(c.Root, ctl, cgroupParent, id))
	}
	return ds
}

// create makes session id's groups with limits l; none when l is zero.
func (c *Cgroups) create(id string, l Limits) ([]string, error) {
	if c == nil || l == (Limits{}) {
		return nil, nil
	}
	dirs := c.dirs(id)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sessions: cgroup %s: %w", d, err)
		}
	}
	set := func(dir, file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("sessions: set %s: %w", filepath.Join(dir, file), err)
		}
		return nil
	}
	var err error
	period := 100000
	quota := strconv.Itoa(int(l.CPUs * float64(period)))
	if c.V2 {
		d := dirs[0]
		if l.MemoryBytes > 0 {
			err = set(d, "memory.max", strconv.FormatInt(l.MemoryBytes, 10))
		}
		if err == nil && l.CPUs > 0 {
			err = set(d, "cpu.max", quota+" "+strconv.Itoa(period))
		}
		if err == nil && l.Processes > 0 {
			err = set(d, "pids.max", strconv.Itoa(l.Processes))
		}
	} else {
		if l.MemoryBytes > 0 {
			err = set(dirs[0], "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
		}
		if err == nil && l.CPUs > 0 {
			err = set(dirs[1], "cpu.cfs_period_us", strconv.Itoa(period))
			if err == nil {
				err = set(dirs[1], "cpu.cfs_quota_us", quota)
			}
		}
		if err == nil && l.Processes > 0 {
			err = set(dirs[2], "pids.max", strconv.Itoa(l.Processes))
		}
	}
	if err != nil {
		c.remove(id)
		return nil, err
	}
	return dirs, nil
}

// remove deletes session id's groups (they must be empty: its processes
// ended).
func (c *Cgroups) remove(id string) {
	if c == nil {
		return
	}
	for _, d := range c.dirs(id) {
		_ = os.Remove(d)
	}
}
