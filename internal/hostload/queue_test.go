package hostload

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRunQueueAndFreeMemory(t *testing.T) {
	meminfo := "MemTotal:       4096 kB\nMemAvailable:   3072 kB\n"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		wantRunQ float64
		wantFree int64
	}{
		{
			name: "cgroup v2 with pressure and a memory limit",
			files: map[string]string{
				"proc/self/cgroup":    "0::/h\n",
				"proc/loadavg":        "9.00 1 1 1/1 1\n",
				"cg/h/cpu.stat":       "usage_usec 1\n",
				"cg/h/cpu.pressure":   "some avg10=42.50 avg60=1.00 avg300=0.00 total=1\nfull avg10=1.00 avg60=0 avg300=0 total=0\n",
				"cg/h/memory.current": "1024\n",
				"cg/h/memory.max":     "4096\n",
			},
			wantRunQ: 0.425, wantFree: 3072,
		},
		{
			name: "cgroup v2 without pressure or limit falls back to the machine",
			files: map[string]string{
				"proc/self/cgroup":    "0::/h\n",
				"proc/loadavg":        "4.00 1 1 1/1 1\n",
				"proc/meminfo":        meminfo,
				"cg/h/cpu.stat":       "usage_usec 1\n",
				"cg/h/memory.current": "1024\n",
				"cg/h/memory.max":     "max\n",
			},
			wantRunQ: 4 / float64(runtime.NumCPU()), wantFree: 3072 << 10,
		},
		{
			name: "cgroup v1 with a quota: throttled share; page cache counted as free",
			files: map[string]string{
				"proc/self/cgroup":                  "4:memory:/h\n2:cpuacct:/h\n1:cpu:/h\n",
				"proc/loadavg":                      "9.00 1 1 1/1 1\n",
				"cg/cpuacct/h/cpuacct.usage":        "1\n",
				"cg/cpu/h/cpu.cfs_quota_us":         "2000\n",
				"cg/cpu/h/cpu.cfs_period_us":        "10000\n",
				"cg/cpu/h/cpu.stat":                 "nr_periods 200\nnr_throttled 50\nthrottled_time 1\n",
				"cg/memory/h/memory.usage_in_bytes": "3072\n",
				"cg/memory/h/memory.limit_in_bytes": "4096\n",
				"cg/memory/h/memory.stat":           "total_inactive_file 1024\ntotal_active_file 1024\n",
			},
			wantRunQ: 0.25, wantFree: 3072,
		},
		{
			name: "cgroup v1 without a quota: the machine's load average",
			files: map[string]string{
				"proc/self/cgroup":                  "4:memory:/h\n2:cpuacct:/h\n1:cpu:/h\n",
				"proc/loadavg":                      "2.00 1 1 1/1 1\n",
				"cg/cpuacct/h/cpuacct.usage":        "1\n",
				"cg/cpu/h/cpu.cfs_quota_us":         "-1\n",
				"cg/cpu/h/cpu.cfs_period_us":        "100000\n",
				"cg/cpu/h/cpu.stat":                 "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
				"cg/memory/h/memory.usage_in_bytes": "4096\n",
				"cg/memory/h/memory.limit_in_bytes": "4096\n",
				"cg/memory/h/memory.stat":           "total_inactive_file 0\ntotal_active_file 0\n",
			},
			wantRunQ: 2 / float64(runtime.NumCPU()), wantFree: 0,
		},
		{
			name: "machine",
			files: map[string]string{
				"proc/self/cgroup": "0::/\n",
				"proc/stat":        "cpu  1 1 1 1 1 1 1 0 0 0\n",
				"proc/loadavg":     "2.00 1 1 1/1 1\n",
				"proc/meminfo":     meminfo,
			},
			wantRunQ: 2 / float64(runtime.NumCPU()), wantFree: 3072 << 10,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.files)
			r := open(filepath.Join(dir, "proc"), filepath.Join(dir, "cg"))
			s, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			if got := r.RunQueue(); got != tc.wantRunQ {
				t.Errorf("RunQueue = %v, want %v", got, tc.wantRunQ)
			}
			if got := r.FreeMemory(s); got != tc.wantFree {
				t.Errorf("FreeMemory = %v, want %v", got, tc.wantFree)
			}
		})
	}
}

// TestRunQueueV1Window checks that the v1 figure is the throttled share of
// the periods since the previous reading, not since the cgroup began.
func TestRunQueueV1Window(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"proc/self/cgroup":           "2:cpuacct:/h\n1:cpu:/h\n",
		"cg/cpuacct/h/cpuacct.usage": "1\n",
		"cg/cpu/h/cpu.cfs_quota_us":  "2000\n",
		"cg/cpu/h/cpu.cfs_period_us": "10000\n",
	})
	r := open(filepath.Join(dir, "proc"), filepath.Join(dir, "cg"))
	for _, step := range []struct {
		periods, throttled int64
		want               float64
	}{
		{100, 10, 0.1}, // since the cgroup began
		{200, 90, 0.8}, // 80 of the next 100 periods
		{200, 90, 0},   // idle: no period ran
		{300, 190, 1},  // every period throttled
		{50, 0, 0},     // counters went back: a new cgroup, from zero
	} {
		write(t, dir, map[string]string{"cg/cpu/h/cpu.stat": fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time 0\n", step.periods, step.throttled)})
		if got := r.RunQueue(); math.Abs(got-step.want) > 1e-9 {
			t.Errorf("after %d periods, %d throttled: RunQueue = %v, want %v", step.periods, step.throttled, got, step.want)
		}
	}
}
