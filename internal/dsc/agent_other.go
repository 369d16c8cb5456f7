//go:build !linux

package dsc

import (
	"context"
	"errors"
)

// Agent is not available off Linux.
type Agent struct{}

// Start fails: the single-address mode needs Linux (AF_PACKET, TUN, iptables).
func Start(context.Context, Config) (*Agent, error) {
	return nil, errors.New("the single-address mode needs Linux (AF_PACKET, TUN and iptables); use the front door's redirect or proxy mode")
}

func (*Agent) RoleChanged()          {}
func (*Agent) Close(context.Context) {}
func (*Agent) Stats() Stats          { return Stats{} }
