package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Up creates the testbed described by cfg and starts a mure node on every
// server host, joined into one cluster. A prefix is one testbed's: Up first
// removes what carries cfg.Prefix (Teardown's sweep), the leftovers of a
// run that died before its Down (whose names and subnet would collide).
// On failure, and when ctx is cancelled, it removes whatever it had
// created.
func Up(ctx context.Context, cfg Config) (tb *Testbed, err error) {
	if err := checkRoot(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(statePath(cfg.Dir)); err == nil {
		return nil, fmt.Errorf("a testbed is already up in %s: `mure testbed down` first", cfg.Dir)
	}
	if err := sweep(ctx, cfg.Prefix); err != nil {
		return nil, fmt.Errorf("remove the leftovers of an earlier testbed %s*: %w", cfg.Prefix, err)
	}
	tb = &Testbed{Config: cfg, Bridge: cfg.Prefix + "br"}
	if cfg.Hub {
		tb.Hub = cfg.Prefix + "hub"
	}
	for _, sub := range []string{cfg.Subnet, tb.HubSubnet()} {
		if sub == "" {
			continue
		}
		if err := checkSubnetFree(ctx, sub); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("testbed directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tb.Down(context.WithoutCancel(ctx))
		}
	}()
	if err := tb.save(); err != nil {
		return tb, err
	}
	if err := tb.mountData(ctx); err != nil {
		return tb, err
	}
	if err := addBridge(ctx, tb.Bridge, cfg.Subnet); err != nil {
		return tb, err
	}
	if err := tb.addHub(ctx); err != nil {
		return tb, err
	}
	for i := range cfg.Servers {
		if err := tb.addHost(ctx, true, i); err != nil {
			return tb, err
		}
	}
	for i := range cfg.Clients {
		if err := tb.addHost(ctx, false, i); err != nil {
			return tb, err
		}
	}
	if err := tb.startNodes(ctx); err != nil {
		return tb, err
	}
	return tb, tb.save()
}

// mountData makes the place of the nodes' data: with DiskTmpfs, a tmpfs
// under the testbed's directory shared by every node (RAM disks: fsync
// costs nothing there); with DiskLoop, the directory of the server hosts'
// own disks' mount points, and the directory of their images.
func (tb *Testbed) mountData(ctx context.Context) error {
	dir := filepath.Join(tb.Config.Dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if tb.Config.Disk == DiskLoop {
		tb.Mount = dir
		if tb.Config.MemoryMB > 0 {
			d, err := setDirtyLimits(tb.Config.Servers, tb.Config.MemoryMB)
			if err != nil {
				return err
			}
			tb.Dirty = d
		}
		if _, err := os.Stat(tb.Config.DiskDir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(tb.Config.DiskDir, 0o755); err != nil {
				return fmt.Errorf("disk directory: %w", err)
			}
			tb.MadeDiskDir = true
		}
		return tb.save()
	}
	if _, err := run(ctx, "mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(tb.Config.DataMB)+"m", tb.Config.Prefix+"data", dir); err != nil {
		return err
	}
	tb.Mount = dir
	return tb.save()
}

// addHost creates server or client host i.
func (tb *Testbed) addHost(ctx context.Context, server bool, i int) error {
	name, link, cpu := "c"+strconv.Itoa(i+1), tb.Config.ClientLink, tb.Config.ClientCPU
	if server {
		name, link, cpu = "s"+strconv.Itoa(i+1), tb.Config.ServerLink, tb.Config.ServerCPU
	}
	h := &Host{Name: name, Server: server, NS: tb.Config.Prefix + name, Veth: tb.Config.Prefix + name,
		Addr: hostAddr(tb.Config.Subnet, server, i), Link: link, CPU: cpu}
	if tb.Hub != "" {
		h.HubVeth = h.Veth + "h"
		if !server {
			h.HubAddr = hostAddr(tb.HubSubnet(), false, i)
		}
	}
	tb.Hosts = append(tb.Hosts, h)
	if err := tb.save(); err != nil {
		return err
	}
	if err := addHost(ctx, h.NS, h.Veth, tb.Bridge, h.Addr, link); err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	if h.HubVeth != "" {
		if err := tb.addHubLink(ctx, h); err != nil {
			return fmt.Errorf("host %s: hub link: %w", name, err)
		}
	}
	cg, err := newCgroup(h.NS, cpu, tb.Config.MemoryMB)
	if err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	h.Cgroup = cg
	if server && tb.Config.Disk == DiskLoop {
		if err := tb.save(); err != nil {
			return err
		}
		d, err := newDisk(ctx, tb.Config.DiskDir, h.NS, filepath.Join(tb.Mount, name), tb.Config.DiskMB, tb.Config.DiskLimits, cg)
		if err != nil {
			return fmt.Errorf("host %s: disk: %w", name, err)
		}
		h.Disk = d
	}
	return tb.save()
}

// Down stops every process of the testbed and removes what it created.
// It goes on past errors and returns them all.
func (tb *Testbed) Down(ctx context.Context) error {
	var errs []error
	for _, h := range tb.Hosts {
		if h.PID > 0 {
			_ = killPID(h.PID)
		}
		if h.Cgroup != nil {
			errs = append(errs, h.Cgroup.remove(ctx))
		}
	}
	for _, h := range tb.Hosts {
		// the link first: a namespace's devices go only when the kernel
		// gets round to destroying it, after this returns
		for _, l := range []string{h.Veth, h.HubVeth} {
			if l == "" {
				continue
			}
			if _, err := run(ctx, "ip", "link", "del", l); err != nil && linkExists(ctx, l) {
				errs = append(errs, err)
			}
		}
		if _, err := run(ctx, "ip", "netns", "del", h.NS); err != nil && nsExists(ctx, h.NS) {
			errs = append(errs, err)
		}
	}
	for _, br := range []string{tb.Bridge, tb.Hub} {
		if br == "" {
			continue
		}
		if _, err := run(ctx, "ip", "link", "del", br); err != nil && linkExists(ctx, br) {
			errs = append(errs, err)
		}
	}
	for _, h := range tb.Hosts {
		if h.Disk != nil {
			errs = append(errs, h.Disk.remove(ctx))
		}
	}
	if tb.Mount != "" && tb.Config.Disk != DiskLoop {
		if err := syscall.Unmount(tb.Mount, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", tb.Mount, err))
		}
	}
	if err := tb.Dirty.restore(); err != nil {
		errs = append(errs, err)
	}
	if tb.MadeDiskDir {
		// another testbed (another prefix) may keep its images there too
		if err := os.Remove(tb.Config.DiskDir); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, fmt.Errorf("disk directory: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// only what Up made: the directory may be one the user chose
	dir := tb.Config.Dir
	errs = append(errs, os.RemoveAll(filepath.Join(dir, "logs")), os.Remove(filepath.Join(dir, "data")),
		os.Remove(statePath(dir)), os.Remove(dir))
	for _, err := range errs {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
