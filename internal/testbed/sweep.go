package testbed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Teardown removes the testbed kept in dir, if any, and then everything on
// the machine that a testbed with prefix makes (sweep): the leftovers of
// a crashed run. Without the state file it cannot know the dirty page
// limits Up replaced, and leaves them.
func Teardown(ctx context.Context, dir, prefix string) error {
	if err := checkRoot(); err != nil {
		return err
	}
	var errs []error
	if tb, err := Load(dir); err == nil {
		errs = append(errs, tb.Down(ctx))
	}
	return errors.Join(append(errs, sweep(ctx, prefix))...)
}

// sweep removes what a testbed with prefix makes (Leftovers): cgroups and
// what runs in them, mounts, loop devices and their images, links and
// namespaces.
func sweep(ctx context.Context, prefix string) error {
	left, err := Leftovers(ctx, prefix)
	if err != nil {
		return err
	}
	var errs []error
	// the cgroups first: removing one kills what still runs in it, which
	// may hold a disk busy
	for _, cg := range left.Cgroups {
		errs = append(errs, removeCgroupDir(ctx, cg))
	}
	for _, m := range left.Mounts {
		errs = append(errs, unmount(ctx, m))
	}
	for _, l := range left.Loops {
		errs = append(errs, (&Disk{Image: l.Image, Dev: l.Dev, MajMin: l.MajMin}).remove(ctx))
	}
	for _, l := range left.Links {
		if _, err := run(ctx, "ip", "link", "del", l); err != nil && linkExists(ctx, l) {
			errs = append(errs, err)
		}
	}
	for _, ns := range left.Netns {
		_, err := run(ctx, "ip", "netns", "del", ns)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ownName reports whether name is one a testbed with prefix gives: a host
// (<prefix>s1, <prefix>c2, ...) followed by suffix, or, with bridges, its
// bridges (<prefix>br, <prefix>hub). Other names that merely start with
// the prefix (the sessions' cgroup mure-sessions, for the default prefix)
// are not the testbed's.
func ownName(prefix, name, suffix string, bridges bool) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if bridges && (rest == "br" || rest == "hub") {
		return true
	}
	host, ok := strings.CutSuffix(rest, suffix)
	if !ok || len(host) < 2 || host[0] != 's' && host[0] != 'c' {
		return false
	}
	return strings.Trim(host[1:], "0123456789") == ""
}

// Left is what carries a testbed's prefix on the machine.
type Left struct {
	Netns, Links, Cgroups []string
	// Loops are loop devices whose image is named with the prefix, Mounts
	// the mount points of those devices and of the prefix's tmpfs.
	Loops  []Loop
	Mounts []string
}

// Loop is a loop device and its image.
type Loop struct{ Dev, MajMin, Image string }

// Empty reports whether nothing is left.
func (l Left) Empty() bool {
	return len(l.Netns)+len(l.Links)+len(l.Cgroups)+len(l.Loops)+len(l.Mounts) == 0
}

func (l Left) String() string {
	return fmt.Sprintf("namespaces %v, links %v, cgroups %v, loop devices %v, mounts %v", l.Netns, l.Links, l.Cgroups, l.Loops, l.Mounts)
}

// Leftovers lists what a testbed with prefix makes that is on the
// machine: namespaces, links, cgroups, loop devices and mounts.
func Leftovers(ctx context.Context, prefix string) (Left, error) {
	var l Left
	ns, err := netnsNames(ctx)
	if err != nil {
		return l, err
	}
	links, err := linkNames(ctx)
	if err != nil {
		return l, err
	}
	for _, n := range ns {
		if ownName(prefix, n, "", false) {
			l.Netns = append(l.Netns, n)
		}
	}
	for _, n := range links {
		if ownName(prefix, n, "", true) || ownName(prefix, n, "h", false) {
			l.Links = append(l.Links, n)
		}
	}
	l.Cgroups = cgroupsWithPrefix(prefix)
	l.Loops = loopsWithPrefix(prefix)
	l.Mounts = mountsOf(prefix, l.Loops)
	return l, nil
}

// loopsWithPrefix finds the loop devices whose backing file is a disk
// image of a testbed with prefix (<prefix><host>.img).
func loopsWithPrefix(prefix string) []Loop {
	devs, _ := filepath.Glob("/sys/block/loop*")
	var out []Loop
	for _, d := range devs {
		back, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		image := strings.TrimSuffix(strings.TrimSpace(string(back)), " (deleted)")
		if !ownName(prefix, filepath.Base(image), ".img", false) {
			continue
		}
		mm, _ := os.ReadFile(filepath.Join(d, "dev"))
		out = append(out, Loop{Dev: "/dev/" + filepath.Base(d), MajMin: strings.TrimSpace(string(mm)), Image: image})
	}
	return out
}

// mountsOf lists the mount points of the loop devices and of the tmpfs
// named <prefix>data.
func mountsOf(prefix string, loops []Loop) []string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if f[0] == prefix+"data" || slices.ContainsFunc(loops, func(l Loop) bool { return l.Dev == f[0] }) {
			out = append(out, f[1])
		}
	}
	return out
}

// cgroupsWithPrefix finds the cgroups of hosts of a testbed with prefix.
// Up makes them under its own process's groups, which on v1 differ from
// one process to another (a job runner may give each job a memory group
// of its own), so a run that died left them under groups this process is
// not in: it looks through the top levels of every hierarchy.
func cgroupsWithPrefix(prefix string) []string {
	roots := []string{cgroupRoot}
	if !isV2() {
		roots = nil
		for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
			if mount, err := filepath.EvalSymlinks(filepath.Join(cgroupRoot, ctrl)); err == nil && !slices.Contains(roots, mount) {
				roots = append(roots, mount)
			}
		}
	}
	const depth = 3 // <root>/process_api/<job>/<prefix>s1
	var out []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil || !d.IsDir():
				return nil
			case ownName(prefix, d.Name(), "", false):
				out = append(out, path)
				return filepath.SkipDir
			case strings.Count(strings.TrimPrefix(path, root), "/") >= depth:
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}
