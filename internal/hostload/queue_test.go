package hostload

import (
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
