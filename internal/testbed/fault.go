package testbed

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
)

// Signal sends sig to the node of server host h.
func (tb *Testbed) Signal(h *Host, sig syscall.Signal) error {
	if !h.Server || h.PID == 0 {
		return fmt.Errorf("%s runs no node", h.Name)
	}
	if !alive(h.PID) {
		return fmt.Errorf("the node of %s (pid %d) is not running", h.Name, h.PID)
	}
	if err := syscall.Kill(h.PID, sig); err != nil {
		return fmt.Errorf("signal %v to the node of %s: %w", sig, h.Name, err)
	}
	return nil
}

// Cut takes host h's link down (on the bridge side), Heal brings it back.
func (tb *Testbed) Cut(ctx context.Context, h *Host) error {
	_, err := run(ctx, "ip", "link", "set", h.Veth, "down")
	return err
}

// Heal brings host h's link back up.
func (tb *Testbed) Heal(ctx context.Context, h *Host) error {
	_, err := run(ctx, "ip", "link", "set", h.Veth, "up")
	return err
}

// Loss drops a fraction p (0..1) of the packets host h sends and receives,
// at random (iptables' statistic match, inside the host); p = 0 removes it.
func (tb *Testbed) Loss(ctx context.Context, h *Host, p float64) error {
	if p < 0 || p > 1 {
		return fmt.Errorf("loss %v: want a probability from 0 to 1", p)
	}
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		if _, err := inNS(ctx, h.NS, "iptables", "-F", chain); err != nil {
			return fmt.Errorf("loss needs iptables (Debian: iptables): %w", err)
		}
		if p == 0 {
			continue
		}
		if _, err := inNS(ctx, h.NS, "iptables", "-A", chain, "-m", "statistic", "--mode", "random",
			"--probability", strconv.FormatFloat(p, 'f', -1, 64), "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}
