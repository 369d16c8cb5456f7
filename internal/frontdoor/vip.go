package frontdoor

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The virtual IP is added with a lifetime and refreshed while the role is
// held: if the node's process dies (SIGKILL, a crash) or is paused, the
// kernel removes the address by itself within VIPLifetime, so a dead
// holder does not go on answering ARP for it beside its successor.
const (
	VIPLifetime = 3 * time.Second
	vipRefresh  = time.Second
)

// addVIP puts the virtual IP on the interface, or renews its lifetime;
// announceVIP then tells the network (gratuitous ARP) to send the front
// door's traffic here.
func (d *Door) addVIP() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	life := strconv.Itoa(int(VIPLifetime / time.Second))
	if out, err := exec.CommandContext(ctx, "ip", "addr", "replace", d.cfg.VIP, "dev", d.cfg.VIPIface,
		"valid_lft", life, "preferred_lft", life).CombinedOutput(); err != nil {
		return fmt.Errorf("add virtual IP %s to %s: %v: %s", d.cfg.VIP, d.cfg.VIPIface, err, strings.TrimSpace(string(out)))
	}
	d.vipAt = time.Now()
	return nil
}

// refreshVIP renews the address's lifetime when due (the role's holder
// calls it at every check).
func (d *Door) refreshVIP() {
	if d.cfg.VIP == "" || time.Since(d.vipAt) < vipRefresh {
		return
	}
	if err := d.addVIP(); err != nil {
		d.log.Warn("cannot renew the virtual IP", "err", err)
	}
}

// announceVIP sends gratuitous ARP for the virtual IP with Debian's arping.
// It takes about a second; the front door is already open meanwhile.
func (d *Door) announceVIP() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ip := vipAddr(d.cfg.VIP)
	// Unsolicited ARP, twice: a switch or a neighbour that missed the first
	// learns from the second.
	if out, err := exec.CommandContext(ctx, "arping", "-q", "-U", "-c", "2", "-w", "1", "-i", d.cfg.VIPIface, "-S", ip, ip).CombinedOutput(); err != nil {
		// arping exits non-zero when no host answers, which is normal for
		// gratuitous ARP; only a missing program matters.
		if _, ok := err.(*exec.ExitError); !ok {
			d.log.Warn("gratuitous ARP not sent (install Debian's arping)", "err", err, "out", strings.TrimSpace(string(out)))
		}
	}
}

// dropVIP removes the virtual IP (absent is fine).
func (d *Door) dropVIP() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, "ip", "addr", "del", d.cfg.VIP, "dev", d.cfg.VIPIface).Run()
}

// vipAddr returns the address part of "ADDR/PREFIX".
func vipAddr(vip string) string {
	if p, err := netip.ParsePrefix(vip); err == nil {
		return p.Addr().String()
	}
	return vip
}
