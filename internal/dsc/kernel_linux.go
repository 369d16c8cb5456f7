package dsc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// kernelPath owns the TC program of kprog_linux.go and its maps on this
// node's client interface.
type kernelPath struct {
	cfg, st, syns *ebpf.Map
	prog          *ebpf.Program
	link          link.Link
	ifindex       int
	veth          bool // redirect into the peer's ingress
	mac           net.HardwareAddr
}

// kernelConfig is what user space tells the program.
type kernelConfig struct {
	// Lease: how long from now this node may place SYNs (master mode;
	// 0: it places none). The master renews it well before it runs out.
	Lease        time.Duration
	Master, Self int // ranks
	// Ring: the live ranks, in the order new connections take them; a
	// remembered SYN goes to its rank only while that rank is in the ring.
	// For ISN, every rank.
	Ring []int
	ISN  bool // 001's static baseline: no master, ring[ISN % len]
	// Policy is policyRR, policyLC or policyP2C; Load, for the last two,
	// each rank's reported connections less what the program had placed on
	// it when they were taken (placedByRank).
	Policy int
	Load   map[int]int64
}

// String describes c less its lease (to tell when it changed).
func (c kernelConfig) String() string {
	return fmt.Sprintf("isn=%v master=%d self=%d ring=%v policy=%d load=%v", c.ISN, c.Master, c.Self, c.Ring, c.Policy, c.Load)
}

// loadKernelPath loads the program and its maps, for SYNs to dst:port
// arriving on iface; attach puts it on the interface.
func loadKernelPath(iface string, dst netip.Addr, port uint16, mac net.HardwareAddr) (*kernelPath, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("single-address kernel path: %w", err)
	}
	k := &kernelPath{ifindex: ifi.Index, mac: mac, veth: isVeth(iface)}
	cs, ss, ys := kernelMaps()
	if k.cfg, err = ebpf.NewMap(cs); err == nil {
		if k.st, err = ebpf.NewMap(ss); err == nil {
			k.syns, err = ebpf.NewMap(ys)
		}
	}
	if err == nil {
		k.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "mdsc_syn", Type: ebpf.SchedCLS, License: "GPL",
			Instructions: kernelProgram(k.cfg, k.st, k.syns, dst, port)})
	}
	if err == nil {
		err = k.configure(kernelConfig{})
	}
	if err != nil {
		k.close()
		return nil, fmt.Errorf("single-address kernel path: load the program: %w", err)
	}
	return k, nil
}

// attach puts the program on the interface's ingress.
func (k *kernelPath) attach() error {
	l, err := link.AttachTCX(link.TCXOptions{Interface: k.ifindex, Program: k.prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return fmt.Errorf("single-address kernel path: attach to the client interface: %w", err)
	}
	k.link = l
	return nil
}

func (k *kernelPath) close() {
	if k.link != nil {
		k.link.Close()
	}
	if k.prog != nil {
		k.prog.Close()
	}
	for _, m := range []*ebpf.Map{k.cfg, k.st, k.syns} {
		if m != nil {
			m.Close()
		}
	}
}

// configure writes c into the program's configuration.
func (k *kernelPath) configure(c kernelConfig) error {
	if len(c.Ring) > maxRanks {
		return fmt.Errorf("single-address kernel path: %d nodes; at most %d", len(c.Ring), maxRanks)
	}
	b := make([]byte, cfgSize)
	ne := binary.NativeEndian
	if c.Lease > 0 {
		ne.PutUint64(b[cfgLease:], uint64(monotonic()+c.Lease))
	}
	ne.PutUint32(b[cfgRingLen:], uint32(len(c.Ring)))
	ne.PutUint32(b[cfgMaster:], uint32(c.Master))
	ne.PutUint32(b[cfgSelf:], uint32(c.Self))
	ne.PutUint32(b[cfgIfindex:], uint32(k.ifindex))
	var alive uint64
	for _, r := range c.Ring {
		if r >= 0 && r < maxRanks {
			alive |= 1 << r
		}
	}
	ne.PutUint64(b[cfgAlive:], alive)
	if c.ISN {
		ne.PutUint32(b[cfgMode:], modeISN)
	}
	if k.veth {
		ne.PutUint32(b[cfgPeer:], 1)
	}
	copy(b[cfgMAC:cfgMAC+6], k.mac)
	for i, r := range c.Ring {
		ne.PutUint32(b[cfgRing+4*i:], uint32(r))
	}
	ne.PutUint32(b[cfgPolicy:], uint32(c.Policy))
	for r, v := range c.Load {
		if r >= 0 && r < maxRanks {
			ne.PutUint64(b[cfgLoad+8*r:], uint64(v))
		}
	}
	if err := k.cfg.Update(uint32(0), b, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("single-address kernel path: configure: %w", err)
	}
	return nil
}

// remember fills the program's SYN table: each client address:port goes to
// its rank (a new master's rebuild).
func (k *kernelPath) remember(entries map[int][]netip.AddrPort) error {
	now := uint64(monotonic())
	var errs []error
	for rank, clients := range entries {
		for _, c := range clients {
			key, val := synKey(c), make([]byte, synValueSize)
			binary.NativeEndian.PutUint32(val[0:], uint32(rank))
			binary.NativeEndian.PutUint64(val[8:], now)
			if err := k.syns.Update(key, val, ebpf.UpdateAny); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// synKey is the program's table key for client: its address and port as
// the program stores them (wire bytes, the port widened by a native load).
func synKey(c netip.AddrPort) []byte {
	key := make([]byte, synKeySize)
	a := c.Addr().As4()
	copy(key, a[:])
	binary.NativeEndian.PutUint32(key[4:], uint32(binary.NativeEndian.Uint16([]byte{byte(c.Port() >> 8), byte(c.Port())})))
	return key
}

// kernelStats are the program's counters.
type kernelStats struct{ Placed, Retransmitted, Expired, Accepted uint64 }

func (k *kernelPath) stats() kernelStats {
	b := make([]byte, stSize)
	if err := k.st.Lookup(uint32(0), &b); err != nil {
		return kernelStats{}
	}
	ne := binary.NativeEndian
	return kernelStats{Placed: ne.Uint64(b[stPlaced:]), Retransmitted: ne.Uint64(b[stRetrans:]), Expired: ne.Uint64(b[stExpired:]),
		Accepted: ne.Uint64(b[stAccepted:])}
}

// isVeth reports whether iface is a veth (the testbed's links).
func isVeth(iface string) bool {
	out, err := exec.Command("ip", "-d", "-j", "link", "show", "dev", iface).Output()
	if err != nil {
		return false
	}
	var links []struct {
		Info struct {
			Kind string `json:"info_kind"`
		} `json:"linkinfo"`
	}
	return json.Unmarshal(out, &links) == nil && len(links) == 1 && links[0].Info.Kind == "veth"
}

// placedByRank returns how many new connections the program has placed on
// each rank.
func (k *kernelPath) placedByRank() (out [maxRanks]uint64) {
	b := make([]byte, stSize)
	if err := k.st.Lookup(uint32(0), &b); err != nil {
		return out
	}
	for r := range out {
		out[r] = binary.NativeEndian.Uint64(b[stRanks+8*r:])
	}
	return out
}

// monotonic is CLOCK_MONOTONIC, the program's clock (bpf_ktime_get_ns).
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}
