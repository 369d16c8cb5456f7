package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"os"
)

// The hub: the client network of the single-address cluster (paper 001's
// TCP-DSC, docs/decisions/0009). Every host has a second link, eth1, on a
// bridge that floods every frame to every port, so that every server sees
// every client frame, as on a hub or a mirrored switch port.

// HubDev is the hub interface inside every host.
const HubDev = "eth1"

// hubSubnet is the /24 after subnet (10.77.0.0/24 → 10.77.1.0/24).
func hubSubnet(subnet string) (string, error) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return "", err
	}
	a := p.Masked().Addr().As4()
	if a[2] == 255 {
		return "", fmt.Errorf("subnet %s: the hub takes the next /24 and there is no next /24: choose another --subnet", subnet)
	}
	a[2]++
	hub := netip.PrefixFrom(netip.AddrFrom4(a), 24)
	if !hub.Addr().IsPrivate() {
		return "", fmt.Errorf("hub subnet %s (the /24 after %s) is not private: choose another --subnet", hub, subnet)
	}
	return hub.String(), nil
}

// HubSubnet returns the hub's /24, or "" when the testbed has no hub.
func (tb *Testbed) HubSubnet() string {
	if !tb.Config.Hub {
		return ""
	}
	s, _ := hubSubnet(tb.Config.Subnet) // validated by Up
	return s
}

// ClusterAddr returns the address the servers share on the hub (its .10),
// or "" when the testbed has no hub. The testbed does not assign it: each
// node's single-address agent puts it, with the shared MAC, on HubDev.
func (tb *Testbed) ClusterAddr() string {
	s := tb.HubSubnet()
	if s == "" {
		return ""
	}
	a := netip.MustParsePrefix(s).Addr().As4()
	a[3] = 10
	return netip.AddrFrom4(a).String()
}

// addHub creates the hub bridge, if the testbed has one: with an ageing
// time of 0 it forgets every address it learns at once, so it floods every
// frame to every port. It has no address: the root namespace stays off the
// client network.
func (tb *Testbed) addHub(ctx context.Context) error {
	if tb.Hub == "" {
		return nil
	}
	_, err := run(ctx, "ip", "link", "add", tb.Hub, "type", "bridge", "ageing_time", "0")
	if err == nil {
		_, err = run(ctx, "ip", "link", "set", tb.Hub, "up")
	}
	return err
}

// addHubLink gives host h its hub link: HubDev inside, h.HubVeth on the
// hub, shaped like eth0, with h.HubAddr (none on servers). IPv6 is off on
// it (the plan is IPv4 first, and servers sharing one MAC would claim the
// same link-local address).
func (tb *Testbed) addHubLink(ctx context.Context, h *Host) error {
	if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
		// "default" applies to the interfaces made from now on: eth1, not eth0
		if _, err := run(ctx, "nsenter", "--net=/run/netns/"+h.NS, "sh", "-c",
			"echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"); err != nil {
			return err
		}
	}
	return addLink(ctx, h.NS, HubDev, h.HubVeth, tb.Hub, h.HubAddr, h.Link)
}
