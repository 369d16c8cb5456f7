package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loopDetachTimeout bounds the wait for a loop device to be let go once
// its file system is unmounted.
const loopDetachTimeout = 10 * time.Second

// attachLoop attaches image to a free loop device with direct I/O (so
// that the host's page cache is its only cache and the device's
// throughput is what reaches the image) and 4 KiB sectors, marked to
// detach itself at its last close (autoclear): once its file system is
// unmounted — in every mount namespace — the kernel lets it go, also
// after a run that died before its Down. It returns the device, open
// read-only: closing it before anything else holds the device detaches it.
func attachLoop(image string) (*os.File, error) {
	back, err := os.OpenFile(image, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	defer back.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("the testbed's disks need loop devices: %w", err)
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(back.Fd()), Size: 4096}
	cfg.Info.Flags = unix.LO_FLAGS_DIRECT_IO | unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], image)
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev, err := os.OpenFile(fmt.Sprintf("/dev/loop%d", n), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open a free loop device: %w", err)
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			// held read-only: a kernel that refuses to mount a device
			// open for writing (BLK_DEV_WRITE_MOUNTED=n) mounts it
			hold, err := os.Open(dev.Name())
			dev.Close()
			return hold, err
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("attach %s to %s: %w", image, dev.Name(), err)
		}
		// another process took the device between the two calls
	}
	return nil, fmt.Errorf("attach %s: every free loop device was taken meanwhile", image)
}

// loopHolds reports whether loop device dev is attached to image.
func loopHolds(dev, image string) bool {
	back, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/loop/backing_file")
	if err != nil {
		return false
	}
	b := strings.TrimSuffix(strings.TrimSpace(string(back)), " (deleted)")
	if b == "" {
		return false
	}
	real, _ := filepath.EvalSymlinks(image) // the kernel names the file by its real path
	return b == image || b == real
}

// detachLoop detaches loop device dev if it still holds image and waits
// until the kernel has let it go. The kernel detaches a device at its
// last close: while something still holds it (its file system, lazily
// unmounted or mounted in another mount namespace too) it stays, so after
// loopDetachTimeout this gives up and says what holds it.
func detachLoop(ctx context.Context, dev, image string) error {
	if !loopHolds(dev, image) {
		return nil // detached already, or reused by someone else
	}
	// a device attached without autoclear (by an older testbed) is
	// detached now when nothing else holds it, else at its last close
	if f, err := os.Open(dev); err == nil {
		err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.ENXIO) {
			return fmt.Errorf("detach %s: %w", dev, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, loopDetachTimeout)
	defer cancel()
	for loopHolds(dev, image) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("loop device %s still holds %s after %v: %s", dev, image, loopDetachTimeout, loopUsers(dev))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// loopUsers says which processes hold loop device dev: those whose mount
// namespace has it mounted, and those with it open.
func loopUsers(dev string) string {
	mm, _ := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/dev")
	majmin := strings.TrimSpace(string(mm))
	var users []string
	namespaces := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		comm, _ := os.ReadFile(p + "/comm")
		who := fmt.Sprintf("pid %s (%s)", filepath.Base(p), strings.TrimSpace(string(comm)))
		ns, _ := os.Readlink(p + "/ns/mnt")
		if info, err := os.ReadFile(p + "/mountinfo"); err == nil && !namespaces[ns] {
			for line := range strings.Lines(string(info)) {
				if f := strings.Fields(line); len(f) > 4 && f[2] == majmin {
					namespaces[ns] = true
					users = append(users, fmt.Sprintf("mounted on %s in the mount namespace of %s", f[4], who))
					break
				}
			}
		}
		fds, _ := filepath.Glob(p + "/fd/*")
		if slices.ContainsFunc(fds, func(fd string) bool { l, _ := os.Readlink(fd); return l == dev }) {
			users = append(users, who+" has it open")
		}
	}
	if len(users) == 0 {
		return "no process holds it (a lazy unmount still under way?)"
	}
	return strings.Join(users, "; ")
}
