package frontdoor

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// addVIP puts the virtual IP on the interface; announceVIP then tells the
// network (gratuitous ARP) to send the front door's traffic here.
func (d *Door) addVIP() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", "addr", "replace", d.cfg.VIP, "dev", d.cfg.VIPIface).CombinedOutput(); err != nil {
		return fmt.Errorf("add virtual IP %s to %s: %v: %s", d.cfg.VIP, d.cfg.VIPIface, err, strings.TrimSpace(string(out)))
	}
	return nil
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
