package dsc

import (
	"encoding/binary"
	"math"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The kernel path places a client SYN without leaving the kernel: a TC
// program on the master's client interface picks the node, tags the SYN
// (IP ID = master rank << 8 | node rank, source MAC = the cluster MAC) and
// sends it back out on the client segment, where every node sees it and only
// the tagged node's filter accepts it (host_linux.go). The master's own picks
// go up its stack with the same tag. The program is attached on every node
// and places only while its lease in the configuration map is valid, so a
// paused master stops placing by itself (fencing), and a member accepts only
// the tag of the master it recognises.
//
// The configuration (array "cfg", one element) is written by user space:
const (
	cfgLease   = 0                    // u64: CLOCK_MONOTONIC ns until which this node places SYNs
	cfgRingLen = 8                    // u32: entries in the ring
	cfgMaster  = 12                   // u32: the master's rank (the tag's high byte)
	cfgSelf    = 16                   // u32: this node's rank
	cfgIfindex = 20                   // u32: the client interface
	cfgAlive   = 24                   // u64: bit r set = rank r is alive
	cfgMode    = 32                   // u32: modeMaster or modeISN
	cfgMAC     = 36                   // [6]byte: the cluster MAC
	cfgPeer    = 44                   // u32: 1 = the interface is a veth: hand SYNs straight to its peer's ingress
	cfgRing    = 48                   // [maxRanks]u32: the live ranks, taken in turn (master) or by ISN (isn)
	cfgPolicy  = cfgRing + 4*maxRanks // u32: policyRR, policyLC or policyP2C
	cfgLoad    = cfgPolicy + 8        // [maxRanks]s64: each rank's last reported connections, less what the program had placed on it by then
	cfgSize    = cfgLoad + 8*maxRanks

	// maxRanks bounds the nodes the kernel path can address.
	maxRanks = 64

	modeMaster = 0
	modeISN    = 1
)

// The program's counters (array "st", one element).
const (
	stCounter  = 0  // u64: the ring's cursor
	stPlaced   = 8  // u64: SYNs placed by the ring
	stRetrans  = 16 // u64: SYNs placed by the table (a retransmission)
	stExpired  = 24 // u64: client SYNs seen without a valid lease
	stAccepted = 32 // u64: SYNs tagged for this node by the master it recognises (taken by its stack)
	stRanks    = 40 // [maxRanks]u64: new connections placed on each rank
	stSize     = stRanks + 8*maxRanks
)

// The SYN table ("syns", LRU hash): key {client address, port} as on the
// wire (8 bytes), value {rank u32, pad u32, at u64 CLOCK_MONOTONIC ns}.
const (
	synKeySize   = 8
	synValueSize = 16
	synEntries   = 65536
)

// TCX verdicts.
const (
	tcxNext = -1 // not ours: the next program, then the stack
	tcxPass = 0  // up this node's stack
)

func kernelMaps() (cfg, st, syns *ebpf.MapSpec) {
	return &ebpf.MapSpec{Name: "mdsc_cfg", Type: ebpf.Array, KeySize: 4, ValueSize: cfgSize, MaxEntries: 1},
		&ebpf.MapSpec{Name: "mdsc_st", Type: ebpf.Array, KeySize: 4, ValueSize: stSize, MaxEntries: 1},
		&ebpf.MapSpec{Name: "mdsc_syns", Type: ebpf.LRUHash, KeySize: synKeySize, ValueSize: synValueSize, MaxEntries: synEntries}
}

// native16 is what a native-endian load of the bytes b0, b1 gives: how the
// program compares packet bytes with constants.
func native16(b0, b1 byte) int32 { return int32(binary.NativeEndian.Uint16([]byte{b0, b1})) }

// kernelProgram is the TC program for client SYNs to dst:port. Stack use
// (offsets from the frame pointer): -8 key.addr, -4 key.port, -12 the
// sequence number, -16 the old IP ID, -20 a zero key, -32 now, -36 the
// chosen rank, -40 the new IP ID, -56 a table value, -64 p2c's first rank.
func kernelProgram(cfg, st, syns *ebpf.Map, dst netip.Addr, port uint16) asm.Instructions {
	d := dst.As4()
	dstN := int32(binary.NativeEndian.Uint32(d[:]))
	portN := native16(byte(port>>8), byte(port))
	const (
		R0, R1, R2, R3, R4, R5 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5
		ctx, pkt, end, conf    = asm.R6, asm.R7, asm.R8, asm.R9
		fp                     = asm.RFP
	)
	stats := end // once the packet checks are done
	count := func(off int16) asm.Instructions {
		return asm.Instructions{asm.Mov.Imm(R3, 1), asm.AddAtomic.Mem(stats, R3, asm.DWord, off)}
	}
	// rankAt loads ring[R2 % ring length] into R2 (R3 clobbered).
	rankAt := asm.Instructions{
		asm.LoadMem(R3, conf, cfgRingLen, asm.Word),
		asm.JEq.Imm(R3, 0, "next"),
		asm.Mod.Reg(R2, R3),
		asm.And.Imm(R2, maxRanks-1),
		asm.LSh.Imm(R2, 2),
		asm.Add.Reg(R2, conf),
		asm.LoadMem(R2, R2, cfgRing, asm.Word),
	}
	// score puts rank r's score (its reported connections, less what was
	// placed on it by then, plus what has been placed on it since) into
	// dst; r must be below maxRanks. R0 and R3 are clobbered unless dst.
	score := func(r, dst asm.Register) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(R0, r), asm.LSh.Imm(R0, 3), asm.Mov.Reg(R3, R0),
			asm.Add.Reg(R0, conf), asm.LoadMem(dst, R0, cfgLoad, asm.DWord),
			asm.Add.Reg(R3, stats), asm.LoadMem(R3, R3, stRanks, asm.DWord),
			asm.Add.Reg(dst, R3),
		}
	}
	storeBytes := func(off int32, from asm.Register, fromOff int32, n int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(R1, ctx), asm.Mov.Imm(R2, off),
			asm.Mov.Reg(R3, from), asm.Add.Imm(R3, fromOff),
			asm.Mov.Imm(R4, n), asm.Mov.Imm(R5, 0),
			asm.FnSkbStoreBytes.Call(),
		}
	}
	var p asm.Instructions
	add := func(ins ...asm.Instruction) { p = append(p, ins...) }
	add(
		asm.Mov.Reg(ctx, R1),
		asm.LoadMem(pkt, ctx, 76, asm.Word), // skb->data
		asm.LoadMem(end, ctx, 80, asm.Word), // skb->data_end
		asm.Mov.Reg(R2, pkt), asm.Add.Imm(R2, 54),
		asm.JGT.Reg(R2, end, "next"),
		// IPv4, no options, TCP, not a fragment, to dst:port, SYN without ACK
		asm.LoadMem(R2, pkt, 12, asm.Half), asm.JNE.Imm(R2, native16(0x08, 0x00), "next"),
		asm.LoadMem(R2, pkt, 14, asm.Byte), asm.JNE.Imm(R2, 0x45, "next"),
		asm.LoadMem(R2, pkt, 23, asm.Byte), asm.JNE.Imm(R2, 6, "next"),
		asm.LoadMem(R2, pkt, 20, asm.Half), asm.And.Imm(R2, native16(0x3f, 0xff)), asm.JNE.Imm(R2, 0, "next"),
		asm.LoadMem(R2, pkt, 30, asm.Word), asm.JNE.Imm32(R2, dstN, "next"),
		asm.LoadMem(R2, pkt, 36, asm.Half), asm.JNE.Imm(R2, portN, "next"),
		asm.LoadMem(R2, pkt, 47, asm.Byte), asm.And.Imm(R2, 0x12), asm.JNE.Imm(R2, 0x02, "next"),
		// what the rest needs, before any helper moves the packet
		asm.LoadMem(R2, pkt, 26, asm.Word), asm.StoreMem(fp, -8, R2, asm.Word),
		asm.LoadMem(R2, pkt, 34, asm.Half), asm.StoreMem(fp, -4, R2, asm.Word),
		asm.LoadMem(R2, pkt, 38, asm.Word), asm.StoreMem(fp, -12, R2, asm.Word),
		asm.LoadMem(R2, pkt, 18, asm.Half), asm.StoreMem(fp, -16, R2, asm.Word),
		asm.StoreImm(fp, -20, 0, asm.Word),
		asm.LoadMapPtr(R1, cfg.FD()), asm.Mov.Reg(R2, fp), asm.Add.Imm(R2, -20),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(R0, 0, "next"),
		asm.Mov.Reg(conf, R0),
		// A frame from the cluster MAC was placed already (by a master):
		// counted when it is tagged for this node by the master it
		// recognises (its filter takes it), else left alone.
		asm.LoadMem(R2, pkt, 6, asm.Word), asm.LoadMem(R3, conf, cfgMAC, asm.Word), asm.JNE.Reg(R2, R3, "client"),
		asm.LoadMem(R2, pkt, 10, asm.Half), asm.LoadMem(R3, conf, cfgMAC+4, asm.Half), asm.JNE.Reg(R2, R3, "client"),
		asm.LoadMem(R2, pkt, 18, asm.Byte), asm.LoadMem(R3, conf, cfgMaster, asm.Word), asm.JNE.Reg(R2, R3, "next"),
		asm.LoadMem(R2, pkt, 19, asm.Byte), asm.LoadMem(R3, conf, cfgSelf, asm.Word), asm.JNE.Reg(R2, R3, "next"),
		asm.LoadMapPtr(R1, st.FD()), asm.Mov.Reg(R2, fp), asm.Add.Imm(R2, -20),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(R0, 0, "next"),
		asm.Mov.Reg(stats, R0),
		asm.Ja.Label("accepted"),
		asm.LoadMapPtr(R1, st.FD()).WithSymbol("client"), asm.Mov.Reg(R2, fp), asm.Add.Imm(R2, -20),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(R0, 0, "next"),
		asm.Mov.Reg(stats, R0),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(fp, -32, R0, asm.DWord),
		asm.LoadMem(R2, conf, cfgMode, asm.Word), asm.JEq.Imm(R2, modeISN, "isn"),
		// master mode: only under a valid lease
		asm.LoadMem(R2, conf, cfgLease, asm.DWord), asm.JGT.Reg(R0, R2, "expired"),
		// a retransmission goes where the table says, while that node lives
		asm.LoadMapPtr(R1, syns.FD()), asm.Mov.Reg(R2, fp), asm.Add.Imm(R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(R0, 0, "choose"),
		asm.LoadMem(R2, R0, 8, asm.DWord), asm.LoadMem(R3, fp, -32, asm.DWord), asm.Sub.Reg(R3, R2),
		asm.LoadImm(R4, int64(synTTL), asm.DWord), asm.JGE.Reg(R3, R4, "choose"),
		asm.LoadMem(R2, R0, 0, asm.Word), asm.And.Imm(R2, maxRanks-1),
		asm.LoadMem(R3, conf, cfgAlive, asm.DWord), asm.RSh.Reg(R3, R2), asm.And.Imm(R3, 1),
		asm.JEq.Imm(R3, 0, "choose"),
		asm.StoreMem(fp, -36, R2, asm.Word),
	)
	add(count(stRetrans)...)
	add(asm.Ja.Label("remember"))
	// A new connection, by the policy in force. The cursor moves for each.
	// (Not an atomic fetch-and-add: cilium/ebpf v0.22 drops its fetch flag
	// when it encodes the instruction. Two SYNs placed at the same instant
	// on two CPUs may take the same turn.)
	add(
		asm.LoadMem(R2, stats, stCounter, asm.DWord).WithSymbol("choose"),
		asm.Mov.Reg(R3, R2), asm.Add.Imm(R3, 1), asm.StoreMem(stats, stCounter, R3, asm.DWord),
		asm.LoadMem(R3, conf, cfgPolicy, asm.Word),
		asm.JEq.Imm(R3, policyLC, "lc"),
		asm.JEq.Imm(R3, policyP2C, "p2c"),
	)
	// round robin: the ring's next rank
	add(rankAt...)
	add(asm.Ja.Label("chosen"))
	// least connections: the live rank with the lowest score, scanned from
	// the cursor so that ties rotate. R1 start, i (R7: the packet pointer
	// is not used past the checks), R4 best, R5 its score.
	i := asm.R7
	add(
		asm.Mov.Reg(R1, R2).WithSymbol("lc"), asm.Mov.Imm(i, 0), asm.Mov.Imm(R4, -1),
		asm.LoadImm(R5, math.MaxInt64, asm.DWord),
		asm.JGE.Imm(i, maxRanks, "lcdone").WithSymbol("lcloop"),
		asm.Mov.Reg(R2, R1), asm.Add.Reg(R2, i), asm.And.Imm(R2, maxRanks-1), asm.Add.Imm(i, 1),
		asm.LoadMem(R3, conf, cfgAlive, asm.DWord), asm.RSh.Reg(R3, R2), asm.And.Imm(R3, 1),
		asm.JEq.Imm(R3, 0, "lcloop"),
	)
	add(score(R2, R0)...)
	add(
		asm.JSGE.Reg(R0, R5, "lcloop"),
		asm.Mov.Reg(R4, R2), asm.Mov.Reg(R5, R0),
		asm.Ja.Label("lcloop"),
		asm.JSLT.Imm(R4, 0, "next").WithSymbol("lcdone"),
		asm.Mov.Reg(R2, R4),
		asm.Ja.Label("chosen"),
	)
	// power of two choices: two random live ranks, the lower score (the
	// first on a tie)
	add(asm.FnGetPrandomU32.Call().WithSymbol("p2c"), asm.Mov.Reg(R2, R0))
	add(rankAt...)
	add(asm.StoreMem(fp, -64, R2, asm.Word), asm.FnGetPrandomU32.Call(), asm.Mov.Reg(R2, R0))
	add(rankAt...)
	add(asm.And.Imm(R2, maxRanks-1))
	add(score(R2, R4)...)
	add(asm.LoadMem(R1, fp, -64, asm.Word), asm.And.Imm(R1, maxRanks-1))
	add(score(R1, R5)...)
	add(
		asm.JSGT.Reg(R5, R4, "chosen"),
		asm.Mov.Reg(R2, R1),
	)
	// the chosen rank (R2): remembered, and counted for the policies
	add(
		asm.StoreMem(fp, -36, R2, asm.Word).WithSymbol("chosen"),
		asm.And.Imm(R2, maxRanks-1), asm.LSh.Imm(R2, 3), asm.Add.Reg(R2, stats),
		asm.Mov.Imm(R3, 1), asm.AddAtomic.Mem(R2, R3, asm.DWord, stRanks),
	)
	add(count(stPlaced)...)
	add(
		asm.LoadMem(R2, fp, -36, asm.Word).WithSymbol("remember"), asm.StoreMem(fp, -56, R2, asm.DWord),
		asm.LoadMem(R2, fp, -32, asm.DWord), asm.StoreMem(fp, -48, R2, asm.DWord),
		asm.LoadMapPtr(R1, syns.FD()), asm.Mov.Reg(R2, fp), asm.Add.Imm(R2, -8),
		asm.Mov.Reg(R3, fp), asm.Add.Imm(R3, -56), asm.Mov.Imm(R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("tag"),
	)
	// ISN mode (001's static baseline): rank = ring[sequence number % length];
	// this node takes only its own share, the others' are dropped here.
	add(asm.LoadMem(R2, fp, -12, asm.Word).WithSymbol("isn"), asm.HostTo(asm.BE, R2, asm.Word))
	add(rankAt...)
	add(asm.LoadMem(R3, conf, cfgSelf, asm.Word), asm.JNE.Reg(R2, R3, "next"), asm.StoreMem(fp, -36, R2, asm.Word))
	add(count(stPlaced)...)
	// tag: IP ID = master << 8 | rank (checksum updated), source MAC = the cluster's
	add(
		asm.LoadMem(R2, conf, cfgMaster, asm.Word).WithSymbol("tag"), asm.LSh.Imm(R2, 8),
		asm.LoadMem(R3, fp, -36, asm.Word), asm.Or.Reg(R2, R3),
		asm.HostTo(asm.BE, R2, asm.Half), asm.StoreMem(fp, -40, R2, asm.Half),
		asm.Mov.Reg(R1, ctx), asm.Mov.Imm(R2, 24),
		asm.LoadMem(R3, fp, -16, asm.Word), asm.LoadMem(R4, fp, -40, asm.Half), asm.Mov.Imm(R5, 2),
		asm.FnL3CsumReplace.Call(),
		asm.JNE.Imm(R0, 0, "next"),
	)
	add(storeBytes(18, fp, -40, 2)...)
	add(storeBytes(6, conf, cfgMAC, 6)...)
	add(
		asm.LoadMem(R2, fp, -36, asm.Word), asm.LoadMem(R3, conf, cfgSelf, asm.Word),
		asm.JNE.Reg(R2, R3, "out"),
		asm.Mov.Imm(R3, 1).WithSymbol("accepted"), asm.AddAtomic.Mem(stats, R3, asm.DWord, stAccepted),
		asm.Mov.Imm(R0, tcxPass), asm.Return(),
		// out on the segment: on a veth straight into its peer (no second
		// pass through this host's queue and backlog), else the NIC's egress
		asm.LoadMem(R2, conf, cfgPeer, asm.Word).WithSymbol("out"), asm.JEq.Imm(R2, 0, "egress"),
		asm.LoadMem(R1, conf, cfgIfindex, asm.Word), asm.Mov.Imm(R2, 0),
		asm.FnRedirectPeer.Call(),
		asm.Return(),
		asm.LoadMem(R1, conf, cfgIfindex, asm.Word).WithSymbol("egress"), asm.Mov.Imm(R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
	)
	add(asm.Mov.Imm(R3, 1).WithSymbol("expired"), asm.AddAtomic.Mem(stats, R3, asm.DWord, stExpired))
	add(asm.Mov.Imm(R0, tcxNext).WithSymbol("next"), asm.Return())
	return p
}
