package hostload

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// IO is this process's disk traffic and its network namespace's, as
// running totals in bytes.
type IO struct {
	// DiskRead and DiskWrite are the bytes this process made the block
	// layer read and write (/proc/self/io read_bytes, write_bytes): its
	// store and raft log, not page cache hits.
	DiskRead, DiskWrite int64
	// NetRx and NetTx are the bytes received and sent on the interfaces
	// of the process's network namespace, loopback excluded
	// (/proc/self/net/dev: an emulated host's own, else the machine's).
	NetRx, NetTx int64
}

// ReadIO reads the running totals; what cannot be read stays 0.
func (r *Reader) ReadIO() IO {
	var io IO
	st := readColon(filepath.Join(r.root, "self", "io"))
	io.DiskRead, io.DiskWrite = st["read_bytes"], st["write_bytes"]
	io.NetRx, io.NetTx = netDev(filepath.Join(r.root, "self", "net", "dev"))
	return io
}

// readColon reads "name: value" lines (/proc/self/io).
func readColon(file string) map[string]int64 {
	m := map[string]int64{}
	data, err := os.ReadFile(file)
	if err != nil {
		return m
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				m[k] = n
			}
		}
	}
	return m
}

// netDev sums the received and sent bytes of /proc/net/dev's interfaces
// but lo.
func netDev(file string) (rx, tx int64) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(data)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		r, _ := strconv.ParseInt(f[0], 10, 64)
		t, _ := strconv.ParseInt(f[8], 10, 64)
		rx, tx = rx+r, tx+t
	}
	return rx, tx
}
