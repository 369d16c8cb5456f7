package holder

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sampleEvery is how often the holder measures its session's processes.
const sampleEvery = 2 * time.Second

// busyTicks is the CPU time (in clock ticks, 10 ms) per sample from which
// the session counts as busy (1.5% of a core): a program computing
// without writing is not idle (the JupyterHub culler's known failing).
const busyTicks = 3

// Status is what a holder reports about its session.
type Status struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Size    Size      `json:"size"`
	Clients int       `json:"clients"`
	// LastActive is the latest of the last input, the last output and the
	// last sample in which the session's processes used the CPU.
	LastActive time.Time `json:"last_active"`
	// CPUSeconds and MemoryBytes are the session's processes' CPU time and
	// resident memory; Processes how many there are.
	CPUSeconds  float64 `json:"cpu_seconds"`
	MemoryBytes int64   `json:"memory_bytes"`
	Processes   int     `json:"processes"`
}

// activity measures a session's processes: those whose session ID is the
// program's (it is the session leader of its PTY).
type activity struct {
	sid      int
	ticks    int64
	rss      int64
	procs    int
	lastBusy time.Time
}

func newActivity(sid int) *activity { return &activity{sid: sid, lastBusy: time.Now()} }

func (h *holder) sample(stop <-chan struct{}) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ticks, rss, n := scanSession(h.activity.sid)
		h.mu.Lock()
		a := h.activity
		if ticks-a.ticks >= busyTicks {
			a.lastBusy = time.Now()
		}
		a.ticks, a.rss, a.procs = ticks, rss, n
		h.mu.Unlock()
	}
}

func (h *holder) status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.activity
	last := h.lastIn
	for _, t := range []time.Time{h.lastOut, a.lastBusy} {
		if t.After(last) {
			last = t
		}
	}
	return Status{PID: h.cmd.Process.Pid, Started: h.started, Size: h.size, Clients: len(h.peers), LastActive: last,
		CPUSeconds: float64(a.ticks) / 100, MemoryBytes: a.rss, Processes: a.procs}
}

// scanSession sums the CPU ticks and resident bytes of the processes in
// session sid, from /proc.
func scanSession(sid int) (ticks, rss int64, n int) {
	for _, pid := range sessionPIDs(sid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) < 22 {
			continue
		}
		ut, _ := strconv.ParseInt(string(f[11]), 10, 64)
		st, _ := strconv.ParseInt(string(f[12]), 10, 64)
		pages, _ := strconv.ParseInt(string(f[21]), 10, 64)
		ticks += ut + st
		rss += pages * int64(os.Getpagesize())
		n++
	}
	return ticks, rss, n
}

// statFields returns /proc/PID/stat's fields after the command name:
// [0] is the state (field 3), [3] the session ID (field 6).
func statFields(b []byte) [][]byte {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil
	}
	return bytes.Fields(b[i+2:])
}

// sessionPIDs lists the processes whose session ID is sid.
func sessionPIDs(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) > 3 && string(f[3]) == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// signalSession sends sig to every process of session sid.
func signalSession(sid int, sig syscall.Signal) {
	_ = syscall.Kill(-sid, sig)
	for _, pid := range sessionPIDs(sid) {
		_ = syscall.Kill(pid, sig)
	}
}
