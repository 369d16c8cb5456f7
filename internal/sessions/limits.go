package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/mure-dev/mure/internal/hostload"
)

// Cgroups sets a session's limits with cgroups: one group per session in
// each hierarchy (cgroup v2's unified one, or v1's memory, cpu and pids),
// under the node's own group there, so that whatever bounds the node (a
// host's CPU quota and memory limit, a systemd unit's) bounds its sessions
// too. A nil *Cgroups sets none.
type Cgroups struct {
	// Root is the cgroup file system (/sys/fs/cgroup).
	Root string
	// V2 is the unified hierarchy; else v1's per-controller ones.
	V2 bool
	// Parents hold the sessions' groups: one directory (v2) or three (v1:
	// memory, cpu, pids), cgroupParent under the node's own group in each
	// hierarchy. Made with a session's group, removed with the last one.
	Parents []string
	// Escaped says why some Parents are at a hierarchy's root, outside
	// the node's own group ("" when none are): the node's group refused a
	// group in it. Sessions are then not bounded by the node's limits there.
	Escaped string

	mu sync.Mutex // orders the making and removal of Parents
}

// cgroupParent is the group under which each session gets its own.
const cgroupParent = "mure-sessions"

// v2Controllers are what a session's group needs on v2.
const v2Controllers = "+memory +cpu +pids"

// v1Controllers are the v1 hierarchies a session's limits use, in the
// order of Parents.
var v1Controllers = []string{"memory", "cpu", "pids"}

// DetectCgroups returns the node's cgroups if it may create groups there,
// else nil (limits are then not enforced; the log says so).
func DetectCgroups() *Cgroups {
	own, err := hostload.OwnCgroups()
	if err != nil {
		own = map[string]string{}
	}
	return detectCgroups("/sys/fs/cgroup", own)
}

// detectCgroups finds where sessions' groups go under root, given the
// node's own group in each hierarchy (as in /proc/self/cgroup: "" for v2).
func detectCgroups(root string, own map[string]string) *Cgroups {
	c := &Cgroups{Root: root}
	var escaped []string
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		c.V2 = true
		p, why := c.parentIn(root, own[""], v2Controllers, "memory.max")
		if p == "" {
			return nil
		}
		c.Parents = []string{p}
		escaped = append(escaped, why...)
	} else {
		for _, ctl := range v1Controllers {
			mount, err := filepath.EvalSymlinks(filepath.Join(root, ctl)) // cpu -> cpu,cpuacct
			if err != nil {
				return nil
			}
			p, why := c.parentIn(mount, own[ctl], "", "")
			if p == "" {
				return nil
			}
			c.Parents = append(c.Parents, p)
			escaped = append(escaped, why...)
		}
	}
	c.Escaped = strings.Join(escaped, "; ")
	return c
}

// parentIn returns where sessions' groups go in the hierarchy mounted at
// mount: under the node's own group, else (with why) at the root; "" when
// neither takes a group. On v2, enable is written to the group's
// cgroup.subtree_control first and a probe must show the file want.
func (c *Cgroups) parentIn(mount, own, enable, want string) (string, []string) {
	var why []string
	groups := []string{"/"}
	if own != "" && own != "/" {
		groups = []string{own, "/"}
	}
	for _, g := range groups {
		dir := filepath.Join(mount, g)
		err := probeGroup(dir, enable, want)
		if err == nil {
			return filepath.Join(dir, cgroupParent), why
		}
		why = append(why, fmt.Sprintf("the node's cgroup %s refused a group (%v): sessions' groups are made at %s, outside the node's limits", dir, err, mount))
	}
	return "", why
}

// probeGroup checks that a group can be made in dir (with the file want in
// it, when set), leaving nothing behind.
func probeGroup(dir, enable, want string) error {
	if enable != "" {
		// refused where the group holds processes (v2's rule) unless it
		// is the root; the probe then lacks want
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0o644)
	}
	probe := filepath.Join(dir, cgroupParent+"-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return err
	}
	defer os.Remove(probe)
	if want != "" {
		if _, err := os.Stat(filepath.Join(probe, want)); err != nil {
			return fmt.Errorf("no %s in a group there: its controllers are not enabled for children", want)
		}
	}
	return nil
}

func (c *Cgroups) dirs(id string) []string {
	ds := make([]string, len(c.Parents))
	for i, p := range c.Parents {
		ds[i] = filepath.Join(p, id)
	}
	return ds
}

// create makes session id's groups with limits l; none when l is zero.
func (c *Cgroups) create(id string, l Limits) ([]string, error) {
	if c == nil || l == (Limits{}) {
		return nil, nil
	}
	c.mu.Lock()
	dirs := c.dirs(id)
	for _, d := range dirs {
		err := os.MkdirAll(filepath.Dir(d), 0o755)
		if err == nil && c.V2 {
			// the parent holds no process: its children may have the
			// controllers
			err = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.subtree_control"), []byte(v2Controllers), 0o644)
		}
		if err == nil {
			err = os.Mkdir(d, 0o755)
		}
		if err != nil {
			c.mu.Unlock()
			c.remove(id)
			return nil, fmt.Errorf("sessions: cgroup %s: %w", d, err)
		}
	}
	c.mu.Unlock()
	if err := c.set(dirs, l); err != nil {
		c.remove(id)
		return nil, err
	}
	return dirs, nil
}

// set writes limits l into a session's groups.
func (c *Cgroups) set(dirs []string, l Limits) error {
	set := func(dir, file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("sessions: set %s: %w", filepath.Join(dir, file), err)
		}
		return nil
	}
	const period = 100000
	cpuDir, memDir, pidsDir := dirs[0], dirs[0], dirs[0]
	if !c.V2 {
		memDir, cpuDir, pidsDir = dirs[0], dirs[1], dirs[2]
	}
	var quota string
	if l.CPUs > 0 {
		// A group may not be given more CPU than its ancestors have (v1
		// refuses the write): the node's own quota is the session's most.
		cores := min(l.CPUs, cpuCeiling(filepath.Dir(cpuDir), c.V2))
		quota = strconv.Itoa(max(int(cores*period), 1000))
	}
	var err error
	if l.MemoryBytes > 0 {
		file := "memory.limit_in_bytes"
		if c.V2 {
			file = "memory.max"
		}
		err = set(memDir, file, strconv.FormatInt(l.MemoryBytes, 10))
	}
	if err == nil && l.CPUs > 0 {
		if c.V2 {
			err = set(cpuDir, "cpu.max", quota+" "+strconv.Itoa(period))
		} else if err = set(cpuDir, "cpu.cfs_period_us", strconv.Itoa(period)); err == nil {
			err = set(cpuDir, "cpu.cfs_quota_us", quota)
		}
	}
	if err == nil && l.Processes > 0 {
		err = set(pidsDir, "pids.max", strconv.Itoa(l.Processes))
	}
	return err
}

// cpuCeiling returns the fewest cores that dir or a group above it may use
// (+Inf-like when none is bounded): the CPU quota a child may have.
func cpuCeiling(dir string, v2 bool) float64 {
	ceiling := float64(1 << 20)
	for d := dir; ; d = filepath.Dir(d) {
		var quota, period float64
		var err error
		if v2 {
			var b []byte
			if b, err = os.ReadFile(filepath.Join(d, "cpu.max")); err == nil {
				f := strings.Fields(string(b))
				if len(f) == 2 && f[0] != "max" {
					quota, _ = strconv.ParseFloat(f[0], 64)
					period, _ = strconv.ParseFloat(f[1], 64)
				}
			}
		} else {
			quota, err = readFloat(filepath.Join(d, "cpu.cfs_quota_us"))
			if err == nil {
				period, err = readFloat(filepath.Join(d, "cpu.cfs_period_us"))
			}
		}
		if errors.Is(err, os.ErrNotExist) { // above the hierarchy's root
			return ceiling
		}
		if quota > 0 && period > 0 {
			ceiling = min(ceiling, quota/period)
		}
		if d == filepath.Dir(d) {
			return ceiling
		}
	}
}

func readFloat(file string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
}

// remove deletes session id's groups (they must be empty: its processes
// ended), and the parents once they hold no other session's.
func (c *Cgroups) remove(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs(id) {
		_ = os.Remove(d)
		_ = os.Remove(filepath.Dir(d)) // fails while others are there
	}
}
