//go:build !linux

package dsc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
)

// Config configures a node's single-address agent (Linux only).
type Config struct {
	Addr       netip.Prefix
	Port       uint16
	Iface      string
	MAC        net.HardwareAddr
	Listen     string
	Key        []byte
	Self       string
	Choose     func(client netip.AddrPort) (node string, ok bool)
	AgentAddr  func(id string) (string, bool)
	Recognised func() string
	Logger     *slog.Logger
}

// Stats are the agent's counters.
type Stats struct{}

// Agent is not available off Linux.
type Agent struct{}

// Start fails: the single-address mode needs Linux (AF_PACKET, TUN, iptables).
func Start(context.Context, Config) (*Agent, error) {
	return nil, errors.New("the single-address mode needs Linux (AF_PACKET, TUN and iptables); use the front door's redirect or proxy mode")
}

func (*Agent) SetMaster(bool)        {}
func (*Agent) Close(context.Context) {}
func (*Agent) Stats() Stats          { return Stats{} }
