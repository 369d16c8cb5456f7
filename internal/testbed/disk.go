package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Disk kinds of Config.Disk.
const (
	// DiskLoop gives every server host a disk of its own: an ext4 image on
	// the machine's real disk, attached to a loop device with direct I/O
	// and throttled on that device (DiskLimits).
	DiskLoop = "loop"
	// DiskTmpfs puts every node's data on one shared tmpfs: RAM disks.
	DiskTmpfs = "tmpfs"
)

// DiskLimits are a host disk's rates; 0 is no limit.
type DiskLimits struct {
	ReadBPS   int64 `json:"read_bps,omitempty"`
	WriteBPS  int64 `json:"write_bps,omitempty"`
	ReadIOPS  int64 `json:"read_iops,omitempty"`
	WriteIOPS int64 `json:"write_iops,omitempty"`
}

func (l DiskLimits) String() string {
	f := func(v int64, unit string) string {
		if v == 0 {
			return "-"
		}
		if unit == "MB/s" {
			return strconv.FormatFloat(float64(v)/1e6, 'g', 4, 64) + " MB/s"
		}
		return strconv.FormatInt(v, 10) + " " + unit
	}
	return fmt.Sprintf("read %s %s, write %s %s", f(l.ReadBPS, "MB/s"), f(l.ReadIOPS, "IOPS"), f(l.WriteBPS, "MB/s"), f(l.WriteIOPS, "IOPS"))
}

// Disk is a server host's own disk (DiskLoop).
type Disk struct {
	Image  string     `json:"image"`  // the image file on the machine's disk
	Dev    string     `json:"dev"`    // its loop device, /dev/loopN
	MajMin string     `json:"majmin"` // the loop device's major:minor
	Mount  string     `json:"mount"`  // where it is mounted
	Limits DiskLimits `json:"limits"` // the rates in force
	// Filler is the file that fills the disk (Fill), "" when none.
	Filler string `json:"filler,omitempty"`
	// Cgroup is the host's cgroup on v2, whose io.max holds the limits.
	Cgroup string `json:"cgroup,omitempty"`
}

// blkioRoot is the cgroup v1 blkio hierarchy's root group. The limits go
// there, on the loop device: buffered writes reach the device from the
// kernel's writeback threads, which v1 charges to the root group, so a
// limit in the host's own group would hold for direct I/O only. The loop
// device is the host's alone, so a limit on the device is the host's.
// On cgroup v2, whose writeback is charged to the group that dirtied the
// pages, the limits go into the host's own group's io.max.
const blkioRoot = cgroupRoot + "/blkio"

// newDisk makes host name's disk: a sparse image of sizeMB in imageDir,
// formatted ext4, attached to a loop device (attachLoop), throttled to lim
// and mounted on mount. On failure it removes what it made.
func newDisk(ctx context.Context, imageDir, name, mount string, sizeMB int, lim DiskLimits, cg *Cgroup) (d *Disk, err error) {
	d = &Disk{Image: filepath.Join(imageDir, name+".img"), Mount: mount}
	if cg != nil && cg.V2 {
		d.Cgroup = cg.CPU
	}
	defer func() {
		if err != nil {
			_ = d.remove(context.WithoutCancel(ctx))
		}
	}()
	f, err := os.OpenFile(d.Image, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return d, fmt.Errorf("disk image: %w", err)
	}
	err = f.Truncate(int64(sizeMB) << 20)
	f.Close()
	if err != nil {
		return d, fmt.Errorf("disk image %s: %w", d.Image, err)
	}
	// initialise the inode tables and journal now: ext4's lazy init would
	// otherwise write them later, through the throttle, beside the load
	if _, err := run(ctx, "mkfs.ext4", "-q", "-F", "-b", "4096", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", d.Image); err != nil {
		return d, fmt.Errorf("the testbed's disks need mkfs.ext4 (Debian: e2fsprogs): %w", err)
	}
	loop, err := attachLoop(d.Image)
	if err != nil {
		return d, err
	}
	// held until the file system holds it: closing it first detaches it
	// (autoclear), also when this fails half-way (and before d.remove
	// waits for the device to go: deferred calls run last in, first out)
	defer loop.Close()
	d.Dev = loop.Name()
	dev := filepath.Base(d.Dev)
	if dio, _ := os.ReadFile("/sys/block/" + dev + "/loop/dio"); strings.TrimSpace(string(dio)) != "1" {
		return d, fmt.Errorf("%s: the loop device has no direct I/O: put the images (--disk-dir %s) on a file system that supports O_DIRECT, not tmpfs", d.Dev, imageDir)
	}
	mm, err := os.ReadFile("/sys/block/" + dev + "/dev")
	if err != nil {
		return d, err
	}
	d.MajMin = strings.TrimSpace(string(mm))
	if err := d.SetLimits(lim); err != nil {
		return d, err
	}
	if err := os.MkdirAll(mount, 0o755); err != nil {
		return d, err
	}
	if _, err := run(ctx, "mount", "-o", "noatime", d.Dev, mount); err != nil {
		return d, err
	}
	return d, nil
}

// SetLimits sets the disk's rates (live: a slow disk).
func (d *Disk) SetLimits(lim DiskLimits) error {
	if d.Cgroup != "" {
		v := func(n int64) string {
			if n == 0 {
				return "max"
			}
			return strconv.FormatInt(n, 10)
		}
		line := fmt.Sprintf("%s rbps=%s wbps=%s riops=%s wiops=%s", d.MajMin, v(lim.ReadBPS), v(lim.WriteBPS), v(lim.ReadIOPS), v(lim.WriteIOPS))
		if err := os.WriteFile(filepath.Join(d.Cgroup, "io.max"), []byte(line), 0o644); err != nil {
			return fmt.Errorf("disk %s: io.max: %w", d.Dev, err)
		}
		d.Limits = lim
		return nil
	}
	if isV2() {
		if lim == (DiskLimits{}) {
			return nil // a leftover's limits went with its host's cgroup
		}
		return fmt.Errorf("disk %s: limits on cgroup v2 need the host's cgroup", d.Dev)
	}
	for _, r := range []struct {
		file string
		v    int64
	}{
		{"read_bps", lim.ReadBPS}, {"write_bps", lim.WriteBPS},
		{"read_iops", lim.ReadIOPS}, {"write_iops", lim.WriteIOPS},
	} {
		file := filepath.Join(blkioRoot, "blkio.throttle."+r.file+"_device")
		// 0 removes the rule
		if err := os.WriteFile(file, []byte(d.MajMin+" "+strconv.FormatInt(r.v, 10)), 0o644); err != nil {
			return fmt.Errorf("disk %s: %s: %w", d.Dev, file, err)
		}
	}
	d.Limits = lim
	return nil
}

// remove unmounts the disk, lifts its limits, waits until the loop device
// is detached and deletes the image. It goes on past errors.
func (d *Disk) remove(ctx context.Context) error {
	var errs []error
	if d.Mount != "" {
		errs = append(errs, unmount(ctx, d.Mount))
		if err := os.Remove(d.Mount); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.Dev != "" {
		if d.MajMin != "" && d.Cgroup == "" { // v2: the rules went with the host's cgroup
			errs = append(errs, d.SetLimits(DiskLimits{}))
		}
		errs = append(errs, detachLoop(ctx, d.Dev, d.Image))
	}
	if err := os.Remove(d.Image); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// unmount unmounts dir, retrying a few times while it is busy (the
// processes that used it were just killed), then lazily.
func unmount(ctx context.Context, dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Unmount(dir, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
			return nil // unmounted, or not a mount point
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) || ctx.Err() != nil {
			if err2 := syscall.Unmount(dir, syscall.MNT_DETACH); err2 != nil && !errors.Is(err2, syscall.EINVAL) {
				return fmt.Errorf("unmount %s: %w", dir, err)
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Fill fills host h's disk, leaving about leave bytes free: a full disk.
// Unfill removes the filler.
func (tb *Testbed) Fill(h *Host, leave int64) error {
	d, err := hostDisk(h)
	if err != nil {
		return err
	}
	if d.Filler != "" {
		return fmt.Errorf("the disk of %s is filled already: unfill it first", h.Name)
	}
	filler := filepath.Join(d.Mount, "testbed-filler")
	if err := fill(filler, d.Mount, leave); err != nil {
		os.Remove(filler)
		return fmt.Errorf("fill the disk of %s: %w", h.Name, err)
	}
	d.Filler = filler
	return tb.save()
}

// fill allocates file until the file system on mount has about leave bytes
// free: in halving chunks, as the file's own block map takes room too.
func fill(file, mount string, leave int64) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	for chunk := int64(1 << 30); chunk >= 4096; {
		var st syscall.Statfs_t
		if err := syscall.Statfs(mount, &st); err != nil {
			return err
		}
		free := int64(st.Bavail) * st.Bsize
		if free <= leave {
			return nil
		}
		n := min(chunk, free-leave)
		err := syscall.Fallocate(int(f.Fd()), 0, size, n)
		switch {
		case err == nil:
			size += n
		case errors.Is(err, syscall.ENOSPC):
			chunk /= 2
		default:
			return err
		}
	}
	return nil
}

// Unfill removes what Fill wrote on host h's disk.
func (tb *Testbed) Unfill(h *Host) error {
	d, err := hostDisk(h)
	if err != nil {
		return err
	}
	if d.Filler == "" {
		return fmt.Errorf("the disk of %s is not filled", h.Name)
	}
	if err := os.Remove(d.Filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	d.Filler = ""
	return tb.save()
}

// SlowDisk sets host h's disk rates live: lim, or the configured ones when
// lim is zero.
func (tb *Testbed) SlowDisk(h *Host, lim DiskLimits) error {
	d, err := hostDisk(h)
	if err != nil {
		return err
	}
	if lim == (DiskLimits{}) {
		lim = tb.Config.DiskLimits
	}
	if err := d.SetLimits(lim); err != nil {
		return err
	}
	return tb.save()
}

func hostDisk(h *Host) (*Disk, error) {
	if h.Disk == nil {
		return nil, fmt.Errorf("%s has no disk of its own (client hosts have none; --disk tmpfs gives none)", h.Name)
	}
	return h.Disk, nil
}
