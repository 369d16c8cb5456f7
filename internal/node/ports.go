package node

import (
	"net"
	"sync"
)

// PortConns is one client-facing listener's open connections, as
// --max-conns counts them (in /status's api.ports).
type PortConns struct {
	// Port is the listener's role: client, fast, s3 or proxy (--proxy
	// and --proxy-fast are both proxy, told apart by Addr).
	Port        string `json:"port"`
	Addr        string `json:"addr"`
	Connections int    `json:"connections"`
}

// clientPorts holds every listener limitConns wrapped, to count its open
// connections.
type clientPorts struct {
	mu   sync.Mutex
	list []clientPort
}

type clientPort struct {
	name, addr string
	open       func() int
}

// add counts ln's open connections as port (ln has Open, as
// frontdoor.LimitConns's listeners do; another is not counted).
func (p *clientPorts) add(port string, ln net.Listener) {
	o, ok := ln.(interface{ Open() int })
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, clientPort{name: port, addr: ln.Addr().String(), open: o.Open})
}

// each returns every listener's open connections, in the order added.
func (p *clientPorts) each() []PortConns {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PortConns, 0, len(p.list))
	for _, l := range p.list {
		out = append(out, PortConns{Port: l.name, Addr: l.addr, Connections: l.open()})
	}
	return out
}

// others returns the open connections of the listeners that are not the
// client ports (--s3, --proxy): the servers on the client ports count
// their own (openConns).
func (p *clientPorts) others() int {
	c := 0
	for _, l := range p.each() {
		if l.Port != "client" && l.Port != "fast" {
			c += l.Connections
		}
	}
	return c
}
