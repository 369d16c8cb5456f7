package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mure-dev/mure/internal/hostload"
)

// Teardown removes the testbed kept in dir, if any, and then everything on
// the machine carrying prefix (cgroups and what runs in them, mounts, loop
// devices and their images, links, namespaces): the leftovers of a crashed
// run. Without the state file it cannot know the dirty page limits Up
// replaced, and leaves them.
func Teardown(ctx context.Context, dir, prefix string) error {
	if err := checkRoot(); err != nil {
		return err
	}
	var errs []error
	if tb, err := Load(dir); err == nil {
		errs = append(errs, tb.Down(ctx))
	}
	left, err := Leftovers(ctx, prefix)
	if err != nil {
		return err
	}
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

// Leftovers lists the namespaces, links and cgroups whose names start with
// prefix.
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
		if strings.HasPrefix(n, prefix) {
			l.Netns = append(l.Netns, n)
		}
	}
	for _, n := range links {
		if strings.HasPrefix(n, prefix) {
			l.Links = append(l.Links, n)
		}
	}
	l.Cgroups = cgroupsWithPrefix(prefix)
	l.Loops = loopsWithPrefix(prefix)
	l.Mounts = mountsOf(prefix, l.Loops)
	return l, nil
}

// loopsWithPrefix finds the loop devices whose backing file's name starts
// with prefix (the testbed's disk images are <prefix><host>.img).
func loopsWithPrefix(prefix string) []Loop {
	devs, _ := filepath.Glob("/sys/block/loop*")
	var out []Loop
	for _, d := range devs {
		back, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		image := strings.TrimSuffix(strings.TrimSpace(string(back)), " (deleted)")
		if name := filepath.Base(image); !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".img") {
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

// cgroupsWithPrefix finds cgroup directories named prefix* under this
// process's own cgroups (v1) or the root (v2).
func cgroupsWithPrefix(prefix string) []string {
	var parents []string
	if isV2() {
		parents = []string{cgroupRoot}
	} else if own, err := hostload.OwnCgroups(); err == nil {
		seen := map[string]bool{}
		for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
			mount, err := filepath.EvalSymlinks(filepath.Join(cgroupRoot, ctrl))
			if err != nil {
				continue
			}
			if d := filepath.Join(mount, own[ctrl]); !seen[d] {
				seen[d] = true
				parents = append(parents, d)
			}
		}
	}
	var out []string
	for _, p := range parents {
		ents, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	return out
}
