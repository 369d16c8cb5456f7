package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/mure-dev/mure/internal/testbed"
)

func init() {
	register("testbed", "emulated hosts on this machine: up, down, exec, faults, bench (root)", runTestbed)
}

const testbedHelp = `Emulated hosts (network namespaces with shaped links and CPU quotas) on
this machine, a mure node on each server host. Needs root.

  up      create the hosts and start a joined cluster (see the flags)
  down    stop everything and remove what up created (also leftovers)
  status  list the hosts, their addresses and what their cgroups measured
  exec HOST -- CMD [ARGS]      run a command inside a host
  kill|stop|cont|start HOST    SIGKILL, SIGSTOP, SIGCONT or restart a node
  cut|heal HOST                take a host's link down or up
  loss HOST P                  drop a fraction P of its packets (0 removes)
  slow-disk HOST MBPS          set a server's disk read and write rate live
                               (0: back to --disk-read/--disk-write)
  fill|unfill HOST             fill a server's disk (a full disk), empty it
  bench [SCENARIO] [bench flags]  run replicated-io (default) or conn-rate
                               from every client host at once

Hosts are s1..sN (servers, 10.77.0.11..) and c1..cM (clients, 10.77.0.101..).
With --hub every host also has eth1 on a hub (10.77.1.0/24): clients at
10.77.1.101.., servers with no address (their nodes share 10.77.1.10).`

// testbedFlags are the flags of mure testbed.
type testbedFlags struct {
	cfg                 testbed.Config
	nodeArgs            string
	diskRead, diskWrite float64
}

func newTestbedFlagSet(stderr io.Writer) (*flag.FlagSet, *testbedFlags) {
	fs := flag.NewFlagSet("testbed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mure testbed VERB [flags] [args]\n\n%s\n\nflags:\n", testbedHelp)
		fs.PrintDefaults()
	}
	tf := &testbedFlags{}
	c := &tf.cfg
	fs.IntVar(&c.Servers, "servers", 2, "up: `N` server hosts")
	fs.IntVar(&c.Clients, "clients", 2, "up: `N` client hosts")
	fs.StringVar(&c.ServerLink, "server-link", "100mbit", "up: each server's link `RATE`, both ways")
	fs.StringVar(&c.ClientLink, "client-link", "100mbit", "up: each client's link `RATE`, both ways")
	fs.Float64Var(&c.ServerCPU, "server-cpu", 0.2, "up: each server's CPU quota in `CORES`")
	fs.Float64Var(&c.ClientCPU, "client-cpu", 0.2, "up: each client's CPU quota in `CORES`")
	fs.IntVar(&c.MemoryMB, "memory", 0, "up: each host's memory limit in `MB` (0: none)")
	fs.StringVar(&c.Disk, "disk", testbed.DiskLoop, "up: the nodes' data on a disk of each server's own (loop: an image on this machine's disk, throttled) or on one shared RAM disk (tmpfs)")
	fs.StringVar(&c.DiskDir, "disk-dir", testbed.DefaultDiskDir, "up: `DIR` of the disk images, on a real disk (not tmpfs)")
	fs.IntVar(&c.DiskMB, "disk-size", 2048, "up: each server's disk in `MB` (loop)")
	fs.Float64Var(&tf.diskRead, "disk-read", 100, "up: each server's disk read rate in `MB/s` (loop; 0: unlimited)")
	fs.Float64Var(&tf.diskWrite, "disk-write", 100, "up: each server's disk write rate in `MB/s` (loop; 0: unlimited)")
	fs.Int64Var(&c.DiskLimits.ReadIOPS, "disk-read-iops", 0, "up: each server's disk read `IOPS` (loop; 0: unlimited)")
	fs.Int64Var(&c.DiskLimits.WriteIOPS, "disk-write-iops", 0, "up: each server's disk write `IOPS` (loop; 0: unlimited)")
	fs.IntVar(&c.DataMB, "data-size", 4096, "up: size in `MB` of the tmpfs holding the nodes' data (tmpfs)")
	fs.StringVar(&tf.nodeArgs, "node-args", "", "up: extra `ARGS` of mure serve on every server, space-separated")
	fs.BoolVar(&c.Hub, "hub", false, "up: add the single-address cluster's client network: eth1 on every host, on a flooding bridge (a hub), on the next /24")
	fs.BoolVar(&c.Auth, "auth", false, "up: start the nodes with authentication on (the admin credential is s1's DATA/admin.token, e.g. for S3 access keys)")
	fs.BoolVar(&c.Unbalanced, "unbalanced", false, "up: allow CPU quotas above 1.6 cores in all and client links below 1.5× the servers'")
	fs.StringVar(&c.Subnet, "subnet", testbed.DefaultSubnet, "the hosts' private `/24`")
	fs.StringVar(&c.Prefix, "prefix", testbed.DefaultPrefix, "`PREFIX` of every name the testbed creates")
	fs.StringVar(&c.Dir, "dir", testbed.DefaultDir, "`DIR` of the testbed's state, logs and data")
	return fs, tf
}

func runTestbed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "bench" {
		return runTestbedBench(ctx, args[1:], stdout, stderr)
	}
	fs, tf := newTestbedFlagSet(stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing verb")
	}
	verb, rest := pos[0], pos[1:]
	switch verb {
	case "up":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		return testbedUp(ctx, tf, stdout)
	case "down":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		return testbed.Teardown(ctx, tf.cfg.Dir, tf.cfg.Prefix)
	}
	tb, err := testbed.Load(tf.cfg.Dir)
	if err != nil {
		return err
	}
	if verb == "status" {
		return testbedStatus(tb, stdout)
	}
	if len(rest) == 0 {
		return usageError(fs, "%s: missing HOST", verb)
	}
	h, err := tb.Host(rest[0])
	if err != nil {
		return err
	}
	switch verb {
	case "exec":
		if len(rest) < 2 {
			return usageError(fs, "exec: missing command")
		}
		cmd := tb.Command(ctx, h, rest[1], rest[2:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		return cmd.Run()
	case "loss":
		if len(rest) != 2 {
			return usageError(fs, "loss: want HOST P")
		}
		p, err := strconv.ParseFloat(rest[1], 64)
		if err != nil {
			return usageError(fs, "loss: bad probability %q", rest[1])
		}
		return tb.Loss(ctx, h, p)
	case "slow-disk":
		if len(rest) != 2 {
			return usageError(fs, "slow-disk: want HOST MBPS")
		}
		mbps, err := strconv.ParseFloat(rest[1], 64)
		if err != nil || mbps < 0 {
			return usageError(fs, "slow-disk: bad rate %q (MB/s)", rest[1])
		}
		lim := testbed.DiskLimits{}
		if mbps > 0 {
			lim = tb.Config.DiskLimits
			lim.ReadBPS, lim.WriteBPS = int64(mbps*1e6), int64(mbps*1e6)
		}
		return tb.SlowDisk(h, lim)
	}
	if len(rest) != 1 {
		return usageError(fs, "%s: want one HOST", verb)
	}
	switch verb {
	case "kill":
		return tb.Signal(h, syscall.SIGKILL)
	case "stop":
		return tb.Signal(h, syscall.SIGSTOP)
	case "cont":
		return tb.Signal(h, syscall.SIGCONT)
	case "start":
		return tb.Start(ctx, h)
	case "cut":
		return tb.Cut(ctx, h)
	case "heal":
		return tb.Heal(ctx, h)
	case "fill":
		return tb.Fill(h, 0)
	case "unfill":
		return tb.Unfill(h)
	}
	return usageError(fs, "unknown verb %q", verb)
}

func testbedUp(ctx context.Context, tf *testbedFlags, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	tf.cfg.Binary = exe
	tf.cfg.NodeArgs = strings.Fields(tf.nodeArgs)
	tf.cfg.DiskLimits.ReadBPS, tf.cfg.DiskLimits.WriteBPS = int64(tf.diskRead*1e6), int64(tf.diskWrite*1e6)
	tb, err := testbed.Up(ctx, tf.cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "testbed up: %d servers, %d clients; nodes at %s\n", tf.cfg.Servers, tf.cfg.Clients, strings.Join(tb.ServerHTTP(), ","))
	if tb.Hub != "" {
		fmt.Fprintf(stdout, "  hub %s on %s: cluster address %s on %s of every server (set by the nodes)\n", tb.Hub, tb.HubSubnet(), tb.ClusterAddr(), testbed.HubDev)
	}
	fmt.Fprintf(stdout, "  run a command on a host: mure testbed exec c1 -- mure status --node %s\n", tb.ServerHTTP()[0])
	fmt.Fprintf(stdout, "  tear down:               mure testbed down\n")
	return nil
}

func testbedStatus(tb *testbed.Testbed, stdout io.Writer) error {
	hubCol := ""
	if tb.Hub != "" {
		fmt.Fprintf(stdout, "hub %s on %s (%s of every host); cluster address %s\n\n", tb.Hub, tb.HubSubnet(), testbed.HubDev, tb.ClusterAddr())
		hubCol = "HUB ADDR\t"
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tADDR\t"+hubCol+"LINK\tCPU QUOTA\tNODE\tCPU USED\tTHROTTLED\tMEMORY (CACHE)\tDISK")
	for _, h := range tb.Hosts {
		node := "-"
		if h.Server {
			node = fmt.Sprintf("pid %d", h.PID)
			if !testbed.Running(h.PID) {
				node += " (down)"
			}
		}
		addr := h.Addr
		if tb.Hub != "" {
			addr += "\t" + cmp.Or(h.HubAddr, "(cluster "+tb.ClusterAddr()+")")
		}
		u, _ := tb.Usage(h)
		disk := "-"
		if h.Disk != nil {
			disk = h.Disk.Dev + ": " + h.Disk.Limits.String()
			if h.Disk.Filler != "" {
				disk += " (filled)"
			}
		} else if h.Server {
			disk = "tmpfs (shared)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%.1f s\t%.1f s\t%.1f MB (%.1f)\t%s\n", h.Name, addr, h.Link, h.CPU, node,
			u.CPUSeconds, u.ThrottledSeconds, float64(u.MemoryBytes)/1e6, float64(u.PageCacheBytes)/1e6, disk)
	}
	return tw.Flush()
}
