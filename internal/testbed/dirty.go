package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The kernel's dirty page limits. cgroup v1 has none per group: the
// machine's (a share of its whole memory) decide when writeback starts and
// when a writer must wait for it, so a host of a few hundred MB on a large
// machine would buffer every write until an fsync and then flush it all,
// its write phase and its flush in series. DirtyLimits sets them as a
// machine of one host's memory would have them (the kernel's default
// ratios, 10% and 20%): writeback then runs beside the writes, at the
// disk's rate. They stay machine-wide: writeback starts at one host's
// threshold (10% of its memory), and writers wait at the sum of the hosts'
// limits (20% of each one's), which the kernel shares among the hosts'
// disks in proportion to each one's writeback rate.
const vmDir = "/proc/sys/vm"

var dirtyKnobs = []string{"dirty_background_bytes", "dirty_background_ratio", "dirty_bytes", "dirty_ratio"}

// Dirty is the machine's dirty page limits, as read before Up set them.
type Dirty map[string]int64

// setDirtyLimits sets the machine's dirty limits for n hosts of memMB and
// returns the previous ones.
func setDirtyLimits(n, memMB int) (Dirty, error) {
	prev := Dirty{}
	for _, k := range dirtyKnobs {
		v, err := readVM(k)
		if err != nil {
			return nil, err
		}
		prev[k] = v
	}
	mem := int64(memMB) << 20
	if err := writeVM("dirty_background_bytes", mem/10); err != nil {
		return nil, err
	}
	if err := writeVM("dirty_bytes", int64(n)*mem/5); err != nil {
		prev.restore()
		return nil, err
	}
	return prev, nil
}

// restore puts the limits back: each pair as bytes when it was set in
// bytes, else as a ratio (writing one zeroes the other).
func (d Dirty) restore() error {
	if len(d) == 0 {
		return nil
	}
	for _, pair := range [][2]string{{"dirty_background_bytes", "dirty_background_ratio"}, {"dirty_bytes", "dirty_ratio"}} {
		k := pair[0]
		if d[k] == 0 {
			k = pair[1]
		}
		if err := writeVM(k, d[k]); err != nil {
			return err
		}
	}
	return nil
}

func readVM(knob string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(vmDir, knob))
	if err != nil {
		return 0, fmt.Errorf("read vm.%s: %w", knob, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

func writeVM(knob string, v int64) error {
	if err := os.WriteFile(filepath.Join(vmDir, knob), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		return fmt.Errorf("set vm.%s: %w", knob, err)
	}
	return nil
}
