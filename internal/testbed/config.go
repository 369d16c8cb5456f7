package testbed

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Emulation limits from the testbed rules: the hosts' CPU quotas together
// leave the machine's rest to the kernel and the tools, and the clients'
// links together outrun the servers' so that the servers are what is
// measured.
const (
	MaxTotalCPU    = 1.6
	MinClientRatio = 1.5
)

// Config describes a testbed.
type Config struct {
	Servers, Clients int
	// ServerLink and ClientLink are each host's link rate in tc's notation
	// ("100mbit", "1gbit"), applied in both directions.
	ServerLink, ClientLink string
	// ServerCPU and ClientCPU are each host's CPU quota in cores (0.25 is a
	// quarter of one core).
	ServerCPU, ClientCPU float64
	// MemoryMB limits each host's memory (0: no limit, only accounting).
	MemoryMB int
	// Binary is the mure executable the server hosts run.
	Binary string
	// NodeArgs are extra arguments of mure serve on every server host.
	NodeArgs []string
	// Prefix names everything the testbed creates (at most 7 characters,
	// so that interface names fit in 15).
	Prefix string
	// Subnet is the hosts' private /24.
	Subnet string
	// Dir holds the state file, logs and the mount points of the nodes'
	// data.
	Dir string
	// Disk is where the nodes' data lives: DiskLoop (default), a disk of
	// its own per server host, or DiskTmpfs, one shared RAM disk.
	Disk string
	// DiskDir holds the loop disks' images: a directory on the machine's
	// real disk (not tmpfs), made when missing.
	DiskDir string
	// DiskMB is the size of each server host's disk (DiskLoop).
	DiskMB int
	// DiskLimits are each server host's disk rates (DiskLoop).
	DiskLimits DiskLimits
	// DataMB is the size of the tmpfs holding the nodes' data (DiskTmpfs).
	DataMB int
	// Hub adds a client network for the single-address cluster (paper
	// 001's TCP-DSC): a second bridge that floods every frame to every port,
	// as a hub or a mirrored switch port would, and a second link (eth1) on
	// every host, on the subnet after Subnet (10.77.0.0/24 → 10.77.1.0/24).
	// Clients get addresses on it; servers none: their nodes put the shared
	// cluster address (ClusterAddr) and MAC there. The first bridge still
	// carries node-to-node and control traffic.
	Hub bool
	// Unbalanced lifts the MinClientRatio and MaxTotalCPU checks (for
	// experiments that want the clients to be the limit).
	Unbalanced bool
	// Auth starts the nodes with authentication on: the first server
	// writes the admin credential into its data directory (AdminToken),
	// which the testbed's own requests then carry; S3 access keys need it
	// (a signed request names a key, and only a user may make one). Off by
	// default: the testbed's tools (mure testbed bench) send no credentials.
	Auth bool
}

// Defaults of Config.
const (
	DefaultPrefix = "mure-"
	DefaultSubnet = "10.77.0.0/24"
	DefaultDir    = "/run/mure-testbed"
	// DefaultDiskDir is on the real disk in Debian's layout (/var/tmp is
	// not a tmpfs there, unlike /run and often /tmp).
	DefaultDiskDir = "/var/tmp/mure-testbed"
)

func (c *Config) setDefaults() {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.Subnet = cmp.Or(c.Subnet, DefaultSubnet)
	c.Dir = cmp.Or(c.Dir, DefaultDir)
	c.ServerLink = cmp.Or(c.ServerLink, "100mbit")
	c.ClientLink = cmp.Or(c.ClientLink, "100mbit")
	c.ServerCPU = cmp.Or(c.ServerCPU, 0.2)
	c.ClientCPU = cmp.Or(c.ClientCPU, 0.2)
	c.DataMB = cmp.Or(c.DataMB, 4096)
	c.Disk = cmp.Or(c.Disk, DiskLoop)
	c.DiskDir = cmp.Or(c.DiskDir, DefaultDiskDir)
	c.DiskMB = cmp.Or(c.DiskMB, 2048)
}

// Validate checks the configuration against the emulation rules.
func (c *Config) Validate() error {
	c.setDefaults()
	switch {
	case c.Servers < 1 || c.Servers > 16:
		return fmt.Errorf("servers: want 1..16, got %d", c.Servers)
	case c.Clients < 0 || c.Clients > 32:
		return fmt.Errorf("clients: want 0..32, got %d", c.Clients)
	case len(c.Prefix) > 7 || strings.ContainsAny(c.Prefix, "/ \t"):
		return fmt.Errorf("prefix %q: at most 7 characters, no spaces or slashes", c.Prefix)
	case c.ServerCPU <= 0 || c.ClientCPU <= 0:
		return errors.New("CPU quotas must be positive (in cores, e.g. 0.25)")
	case c.Binary == "":
		return errors.New("no mure binary given")
	case c.Disk != DiskLoop && c.Disk != DiskTmpfs:
		return fmt.Errorf("disk %q: want %s (a disk per host) or %s (one shared RAM disk)", c.Disk, DiskLoop, DiskTmpfs)
	case c.Disk == DiskLoop && c.DiskMB < 64:
		return fmt.Errorf("disk size %d MB: want at least 64", c.DiskMB)
	case min(c.DiskLimits.ReadBPS, c.DiskLimits.WriteBPS, c.DiskLimits.ReadIOPS, c.DiskLimits.WriteIOPS) < 0:
		return errors.New("disk limits must be positive (0: none)")
	case c.MemoryMB < 0:
		return errors.New("memory limit must be positive (0: none)")
	}
	p, err := netip.ParsePrefix(c.Subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() != 24 || !p.Addr().IsPrivate() {
		return fmt.Errorf("subnet %q: want a private IPv4 /24 such as %s", c.Subnet, DefaultSubnet)
	}
	if c.Hub {
		if _, err := hubSubnet(c.Subnet); err != nil {
			return err
		}
	}
	sl, err := ParseRate(c.ServerLink)
	if err != nil {
		return fmt.Errorf("server link: %w", err)
	}
	cl, err := ParseRate(c.ClientLink)
	if err != nil {
		return fmt.Errorf("client link: %w", err)
	}
	if c.Unbalanced {
		return nil
	}
	if cpu := float64(c.Servers)*c.ServerCPU + float64(c.Clients)*c.ClientCPU; cpu > MaxTotalCPU+1e-9 {
		return fmt.Errorf("the hosts' CPU quotas add up to %.2f cores, more than %.1f (the rest is the machine's own): lower --server-cpu or --client-cpu", cpu, MaxTotalCPU)
	}
	if c.Clients > 0 {
		if ratio := float64(c.Clients) * float64(cl) / (float64(c.Servers) * float64(sl)); ratio < MinClientRatio {
			return fmt.Errorf("the clients' links add up to %.2f× the servers' (want at least %.1f× so that the servers are measured): add clients or raise --client-link", ratio, MinClientRatio)
		}
	}
	return nil
}

// ParseRate parses a link rate in tc's notation: a number followed by bit,
// kbit, mbit or gbit (decimal multiples). It returns bits per second.
func ParseRate(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}
	ls := strings.ToLower(strings.TrimSpace(s))
	for _, u := range units {
		if num, ok := strings.CutSuffix(ls, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v <= 0 {
				break
			}
			bits := v * u.mult
			if bits < 1e5 || bits > 1e11 {
				return 0, fmt.Errorf("rate %q out of range (100kbit..100gbit)", s)
			}
			return int64(bits), nil
		}
	}
	return 0, fmt.Errorf("rate %q: want a number and a unit, e.g. 100mbit or 1gbit", s)
}
