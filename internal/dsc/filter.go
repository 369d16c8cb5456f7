package dsc

import (
	"fmt"
	"net/netip"

	"golang.org/x/net/bpf"
)

// Offsets into an untagged Ethernet II frame carrying IPv4.
const (
	offEtherType = 12
	offIPv4      = ethHeaderLen
	offIPFrag    = offIPv4 + 6
	offIPProto   = offIPv4 + 9
	offIPDst     = offIPv4 + 16
	// TCP offsets, relative to the IPv4 header length held in X.
	offTCPDstPort = offIPv4 + 2
	offTCPFlags   = offIPv4 + 13
)

// SYNFilter returns a classic BPF program for an AF_PACKET socket that
// accepts the whole frame of every unfragmented IPv4 TCP segment to dst:port
// with SYN set and ACK clear, and drops everything else, so that the master's
// tap wakes up only for new connections. It expects untagged Ethernet II
// frames: a tagged frame is dropped (on Linux the tag is usually stripped
// into packet metadata before the filter runs). The filter is a coarse
// first cut; ParseFrame still validates every accepted frame.
func SYNFilter(dst netip.Addr, port uint16) ([]bpf.RawInstruction, error) {
	dst = dst.Unmap()
	if !dst.Is4() {
		return nil, fmt.Errorf("syn filter for %s: not an IPv4 address", dst)
	}
	var (
		prog  []bpf.Instruction
		drops []int // indexes of the JumpIfs whose true branch drops
	)
	dropIf := func(cond bpf.JumpTest, val uint32) {
		drops = append(drops, len(prog))
		prog = append(prog, bpf.JumpIf{Cond: cond, Val: val})
	}
	a4 := dst.As4()
	prog = append(prog, bpf.LoadAbsolute{Off: offEtherType, Size: 2})
	dropIf(bpf.JumpNotEqual, etherTypeIPv4)
	prog = append(prog, bpf.LoadAbsolute{Off: offIPProto, Size: 1})
	dropIf(bpf.JumpNotEqual, protoTCP)
	// Any fragment but the first lacks the TCP header; a first fragment (MF)
	// could not be re-injected whole.
	prog = append(prog, bpf.LoadAbsolute{Off: offIPFrag, Size: 2})
	dropIf(bpf.JumpBitsSet, ipFlagMF|ipOffsetMask)
	prog = append(prog, bpf.LoadAbsolute{Off: offIPDst, Size: 4})
	dropIf(bpf.JumpNotEqual, uint32(a4[0])<<24|uint32(a4[1])<<16|uint32(a4[2])<<8|uint32(a4[3]))
	// X = 4*([14]&0xf): the IPv4 header length, options included, so the
	// TCP fields below are found whatever the IHL (ldxb 4*([14]&0xf)).
	prog = append(prog, bpf.LoadMemShift{Off: offIPv4})
	prog = append(prog, bpf.LoadIndirect{Off: offTCPDstPort, Size: 2})
	dropIf(bpf.JumpNotEqual, uint32(port))
	prog = append(prog, bpf.LoadIndirect{Off: offTCPFlags, Size: 1})
	prog = append(prog, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: tcpFlagSYN | tcpFlagACK})
	dropIf(bpf.JumpNotEqual, tcpFlagSYN)
	// Accept the whole frame: return its length.
	prog = append(prog, bpf.LoadExtension{Num: bpf.ExtLen}, bpf.RetA{})
	drop := len(prog)
	prog = append(prog, bpf.RetConstant{Val: 0})

	for _, i := range drops {
		j := prog[i].(bpf.JumpIf)
		j.SkipTrue = uint8(drop - i - 1)
		prog[i] = j
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("syn filter for %s:%d: assemble: %w", dst, port, err)
	}
	return raw, nil
}
