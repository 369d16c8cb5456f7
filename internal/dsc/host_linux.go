package dsc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Names of what a node installs on its host (all removed by teardown, and
// removed first at setup, when a crashed predecessor left them).
const (
	TUNName  = "mdsc0"
	chainIn  = "MURE-DSC"
	chainOut = "MURE-DSC-OUT"
)

// hostSetup is the kernel side of a single-address node: the cluster
// address and shared MAC on the client interface, the filter rules that
// drop what another node owns, and the TUN device that re-injected SYNs
// arrive on.
type hostSetup struct {
	iface string
	addr  netip.Prefix
	mac   net.HardwareAddr
	port  uint16
	tun   *os.File
}

// setup installs everything; on error it removes what it installed.
func (h *hostSetup) setup(ctx context.Context) (err error) {
	h.teardown(ctx) // a crashed predecessor's leftovers
	defer func() {
		if err != nil {
			h.teardown(ctx)
		}
	}()
	ip := h.addr.Addr().String()
	steps := [][]string{
		{"ip", "link", "set", "dev", h.iface, "down"},
		{"ip", "link", "set", "dev", h.iface, "address", h.mac.String()},
		{"ip", "link", "set", "dev", h.iface, "up"},
		{"ip", "addr", "replace", h.addr.String(), "dev", h.iface},
		// A client's SYN arriving on the client interface is the master's
		// to place: only its re-injected copy (on the TUN) opens a
		// connection. A segment of a connection another node owns has no
		// conntrack entry here and is INVALID (with tcp_loose=0).
		{"iptables", "-w", "-N", chainIn},
		// Rule 1 takes the SYNs the master placed on this node by the
		// kernel path (acceptTag); none until the control loop sets it.
		h.acceptRule("-A", noTag),
		{"iptables", "-w", "-A", chainIn, "-i", h.iface, "-d", ip, "-p", "tcp", "--syn", "-j", "DROP"},
		{"iptables", "-w", "-A", chainIn, "-i", h.iface, "-d", ip, "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP"},
		{"iptables", "-w", "-I", "INPUT", "-j", chainIn},
		// Never reset a connection another node owns.
		{"iptables", "-w", "-N", chainOut},
		{"iptables", "-w", "-A", chainOut, "-s", ip, "-p", "tcp", "--tcp-flags", "RST", "RST", "-j", "DROP"},
		{"iptables", "-w", "-I", "OUTPUT", "-j", chainOut},
	}
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			return err
		}
	}
	for file, v := range map[string]string{
		"/proc/sys/net/netfilter/nf_conntrack_tcp_loose": "0",
		"/proc/sys/net/ipv4/conf/all/rp_filter":          "0",
	} {
		if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
			return fmt.Errorf("single-address setup: %s: %w", file, err)
		}
	}
	if h.tun, err = openTUN(TUNName); err != nil {
		return err
	}
	for _, s := range [][]string{{"ip", "link", "set", "dev", TUNName, "up"}} {
		if err := run(ctx, s...); err != nil {
			return err
		}
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+TUNName+"/rp_filter", []byte("0"), 0o644); err != nil {
		return fmt.Errorf("single-address setup: rp_filter of %s: %w", TUNName, err)
	}
	return nil
}

// acceptRule is the rule that takes a SYN the kernel path placed on this
// node: from the cluster MAC (a client's own SYN never is), IP ID = tag.
func (h *hostSetup) acceptRule(op string, tag int) []string {
	r := []string{"iptables", "-w", op, chainIn}
	if op == "-R" {
		r = append(r, "1")
	}
	return append(r, "-i", h.iface, "-d", h.addr.Addr().String(), "-p", "tcp", "--dport", fmt.Sprint(h.port), "--syn",
		"-m", "mac", "--mac-source", h.mac.String(), "-m", "u32", "--u32", fmt.Sprintf("4>>16=%#x", tag), "-j", "ACCEPT")
}

// acceptTag makes this node take the SYNs tagged tag (master rank << 8 |
// this node's rank; noTag: none).
func (h *hostSetup) acceptTag(ctx context.Context, tag int) error {
	return run(ctx, h.acceptRule("-R", tag)...)
}

// teardown removes what setup installs; absent pieces are fine.
func (h *hostSetup) teardown(ctx context.Context) {
	if h.tun != nil {
		h.tun.Close() // a non-persistent TUN device goes with its last fd
		h.tun = nil
	}
	for _, s := range [][]string{
		{"iptables", "-w", "-D", "INPUT", "-j", chainIn},
		{"iptables", "-w", "-F", chainIn},
		{"iptables", "-w", "-X", chainIn},
		{"iptables", "-w", "-D", "OUTPUT", "-j", chainOut},
		{"iptables", "-w", "-F", chainOut},
		{"iptables", "-w", "-X", chainOut},
		{"ip", "addr", "del", h.addr.String(), "dev", h.iface},
		{"ip", "link", "del", TUNName},
	} {
		_ = run(ctx, s...)
	}
}

// inject writes a SYN (an IPv4 packet) into the TUN device: to this host's
// kernel it arrives like any received packet.
func (h *hostSetup) inject(pkt []byte) error {
	if h.tun == nil {
		return errors.New("single-address: no TUN device")
	}
	_, err := h.tun.Write(pkt)
	return err
}

// openTUN creates (or attaches to) the TUN device name, without packet
// information headers: each write is one IPv4 packet.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("single-address: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("single-address: create TUN %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}

func run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("single-address setup: %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
