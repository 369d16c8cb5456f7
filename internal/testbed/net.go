package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// hostAddr returns the address of the host with index i in its role:
// servers from .11, clients from .101; .1 is the bridge's.
func hostAddr(subnet string, server bool, i int) string {
	p := netip.MustParsePrefix(subnet).Masked()
	a := p.Addr().As4()
	a[3] = byte(101 + i)
	if server {
		a[3] = byte(11 + i)
	}
	return netip.AddrFrom4(a).String()
}

// bridgeAddr is the root namespace's address on the bridge.
func bridgeAddr(subnet string) string {
	a := netip.MustParsePrefix(subnet).Masked().Addr().As4()
	a[3] = 1
	return netip.AddrFrom4(a).String()
}

// checkSubnetFree refuses a subnet that overlaps an address or route of
// the machine, so that the testbed cannot capture real traffic.
func checkSubnetFree(ctx context.Context, subnet string) error {
	p := netip.MustParsePrefix(subnet)
	out, err := run(ctx, "ip", "-4", "-o", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "default" || dst == "broadcast" || dst == "local" || dst == "unreachable" {
			if len(f) < 2 || dst == "default" {
				continue
			}
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		q, err := netip.ParsePrefix(dst)
		if err == nil && q.Overlaps(p) {
			return fmt.Errorf("subnet %s overlaps the machine's route %q: choose another --subnet, or run `mure testbed down` if it is a leftover", subnet, strings.TrimSpace(line))
		}
	}
	return nil
}

// addBridge creates the bridge with the root namespace's address on it.
func addBridge(ctx context.Context, name, subnet string) error {
	_, err := run(ctx, "ip", "link", "add", name, "type", "bridge")
	if err == nil {
		_, err = run(ctx, "ip", "addr", "add", bridgeAddr(subnet)+"/24", "dev", name)
	}
	if err == nil {
		_, err = run(ctx, "ip", "link", "set", name, "up")
	}
	return err
}

// addHost creates namespace ns with a veth link (eth0 inside, veth on the
// bridge outside), its address, and a token bucket of rate both ways.
func addHost(ctx context.Context, ns, veth, bridge, addr, rate string) error {
	if _, err := run(ctx, "ip", "netns", "add", ns); err != nil {
		return err
	}
	if err := addLink(ctx, ns, "eth0", veth, bridge, addr, rate); err != nil {
		return err
	}
	_, err := run(ctx, "ip", "-n", ns, "link", "set", "lo", "up")
	return err
}

// addLink gives namespace ns the interface dev, a veth whose peer veth is
// on bridge, with address addr (none when empty), up, and a token bucket
// of rate both ways.
func addLink(ctx context.Context, ns, dev, veth, bridge, addr, rate string) error {
	steps := [][]string{
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", dev, "netns", ns},
		{"ip", "link", "set", veth, "master", bridge},
		{"ip", "link", "set", veth, "up"},
	}
	if addr != "" {
		steps = append(steps, []string{"ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev})
	}
	steps = append(steps, []string{"ip", "-n", ns, "link", "set", dev, "up"})
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := shape(ctx, "", veth, rate); err != nil {
		return err
	}
	return shape(ctx, ns, dev, rate)
}

// shape puts a token bucket of rate on dev's egress (in namespace ns, or
// the root namespace when ns is empty). The bucket holds 10 ms of traffic
// (at least 16 KiB) and the queue 20 ms.
func shape(ctx context.Context, ns, dev, rate string) error {
	bits, err := ParseRate(rate)
	if err != nil {
		return err
	}
	burst := max(bits/8/100, 16<<10)
	args := []string{"qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
		"burst", strconv.FormatInt(burst, 10), "latency", "20ms"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	_, err = run(ctx, "tc", args...)
	return err
}

// linkNames lists the interfaces of the root namespace.
func linkNames(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "ip", "-o", "link", "show")
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) >= 2 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			names = append(names, name)
		}
	}
	return names, nil
}

// netnsNames lists the network namespaces.
func netnsNames(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}
