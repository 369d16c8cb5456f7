package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Ports of a mure node on its host's address.
const (
	HTTPPort = 7946
	PeerPort = 7947
)

// Host is one emulated host.
type Host struct {
	Name   string `json:"name"` // s1.., c1..
	Server bool   `json:"server"`
	NS     string `json:"netns"`
	Veth   string `json:"veth"` // the bridge-side end of its link
	Addr   string `json:"addr"`
	// With a hub: the hub-side end of its second link, and (clients only)
	// its address there.
	HubVeth string  `json:"hub_veth,omitempty"`
	HubAddr string  `json:"hub_addr,omitempty"`
	Link    string  `json:"link"`
	CPU     float64 `json:"cpu"`
	Cgroup  *Cgroup `json:"cgroup,omitempty"`
	// Disk is a server host's own disk (Config.Disk "loop").
	Disk *Disk `json:"disk,omitempty"`
	// Servers: the node's process, data directory and log.
	PID  int    `json:"pid,omitempty"`
	Data string `json:"data,omitempty"`
	Log  string `json:"log,omitempty"`
}

// HTTP is the client API address of a server host's node.
func (h *Host) HTTP() string { return h.Addr + ":" + strconv.Itoa(HTTPPort) }

// Peer is the peer address of a server host's node.
func (h *Host) Peer() string { return h.Addr + ":" + strconv.Itoa(PeerPort) }

// Testbed is a set of emulated hosts on one bridge.
type Testbed struct {
	Config Config `json:"config"`
	Bridge string `json:"bridge"`
	Hub    string `json:"hub,omitempty"`   // the hub bridge (Config.Hub)
	Mount  string `json:"mount,omitempty"` // the tmpfs of the nodes' data, or the directory of the disks' mount points
	// Dirty is the machine's dirty page limits before Up set them for its
	// hosts' memory (nil: Up left them alone).
	Dirty Dirty `json:"dirty,omitempty"`
	// MadeDiskDir records that Up made Config.DiskDir (Down removes it).
	MadeDiskDir bool    `json:"made_disk_dir,omitempty"`
	Hosts       []*Host `json:"hosts"`
}

// statePath is where the state of the testbed with this directory lives.
func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// save writes the state file (atomically).
func (tb *Testbed) save() error {
	data, err := json.MarshalIndent(tb, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(tb.Config.Dir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("save testbed state: %w", err)
	}
	return os.Rename(tmp, statePath(tb.Config.Dir))
}

// Load reads the state of the testbed kept in dir.
func Load(dir string) (*Testbed, error) {
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no testbed is up (no %s): run `mure testbed up` first", statePath(dir))
	}
	if err != nil {
		return nil, err
	}
	var tb Testbed
	if err := json.Unmarshal(data, &tb); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(dir), err)
	}
	return &tb, nil
}

// Host returns the host named name.
func (tb *Testbed) Host(name string) (*Host, error) {
	for _, h := range tb.Hosts {
		if h.Name == name {
			return h, nil
		}
	}
	var names []string
	for _, h := range tb.Hosts {
		names = append(names, h.Name)
	}
	return nil, fmt.Errorf("no host %q in the testbed (hosts: %v)", name, names)
}

// Servers returns the server hosts, Clients the client hosts.
func (tb *Testbed) Servers() []*Host { return tb.role(true) }
func (tb *Testbed) Clients() []*Host { return tb.role(false) }

func (tb *Testbed) role(server bool) []*Host {
	var hs []*Host
	for _, h := range tb.Hosts {
		if h.Server == server {
			hs = append(hs, h)
		}
	}
	return hs
}

// ServerHTTP returns the client API addresses of the nodes.
func (tb *Testbed) ServerHTTP() []string {
	var addrs []string
	for _, h := range tb.Servers() {
		addrs = append(addrs, h.HTTP())
	}
	return addrs
}

// Command returns a command that runs name with args inside host h: in its
// cgroups (joined before anything runs) and its network namespace. Unlike
// `ip netns exec`, it keeps the machine's /sys, so a process can read its
// own cgroup's figures.
func (tb *Testbed) Command(ctx context.Context, h *Host, name string, args ...string) *exec.Cmd {
	script := `exec "$@"`
	if h.Cgroup != nil {
		script = h.Cgroup.joinScript()
	}
	all := append([]string{"-c", script, "sh", "nsenter", "--net=/run/netns/" + h.NS, "--", name}, args...)
	return exec.CommandContext(ctx, "sh", all...)
}

// Usage returns what host h's cgroup has measured.
func (tb *Testbed) Usage(h *Host) (Usage, error) {
	if h.Cgroup == nil {
		return Usage{}, errors.New("host has no cgroup")
	}
	return h.Cgroup.usage()
}

// checkRoot returns a clear error when the testbed cannot work here.
func checkRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("the testbed needs root (network namespaces, tc, cgroups): run it as root")
	}
	for _, tool := range []string{"ip", "tc", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the testbed needs %s (Debian: iproute2, util-linux): %w", tool, err)
		}
	}
	return nil
}

// Available reports why the testbed cannot run on this machine (nil: it can).
func Available() error {
	if err := checkRoot(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := run(ctx, "ip", "netns", "list")
	return err
}
