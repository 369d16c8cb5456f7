package hostload

import (
	"os"
	"path/filepath"
	"testing"
)

// write creates the files of a fake /proc and /sys/fs/cgroup under dir.
func write(t *testing.T, dir string, files map[string]string) {
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Sample
	}{
		{
			name: "cgroup v1 host with quota",
			files: map[string]string{
				"proc/self/cgroup":                        "4:memory:/mure-s1\n2:cpuacct:/mure-s1\n1:cpu:/mure-s1\n",
				"cg/cpuacct/mure-s1/cpuacct.usage":        "2500000000\n",
				"cg/cpu/mure-s1/cpu.cfs_quota_us":         "2000\n",
				"cg/cpu/mure-s1/cpu.cfs_period_us":        "10000\n",
				"cg/memory/mure-s1/memory.usage_in_bytes": "1048576\n",
				"cg/memory/mure-s1/memory.limit_in_bytes": "9223372036854771712\n",
			},
			want: Sample{Source: "cgroup v1", CPUSeconds: 2.5, CPUQuota: 0.2, MemoryBytes: 1 << 20},
		},
		{
			name: "cgroup v1 host with throttling, a memory limit and page cache",
			files: map[string]string{
				"proc/self/cgroup":                        "4:memory:/mure-s1\n2:cpuacct:/mure-s1\n1:cpu:/mure-s1\n",
				"cg/cpuacct/mure-s1/cpuacct.usage":        "1000000000\n",
				"cg/cpu/mure-s1/cpu.cfs_quota_us":         "5000\n",
				"cg/cpu/mure-s1/cpu.cfs_period_us":        "10000\n",
				"cg/cpu/mure-s1/cpu.stat":                 "nr_periods 100\nnr_throttled 25\nthrottled_time 750000000\n",
				"cg/memory/mure-s1/memory.usage_in_bytes": "8388608\n",
				"cg/memory/mure-s1/memory.limit_in_bytes": "16777216\n",
				"cg/memory/mure-s1/memory.stat":           "cache 6291456\nrss 2097152\ninactive_file 4194304\nactive_file 2097152\ntotal_inactive_file 4194304\ntotal_active_file 1048576\n",
			},
			want: Sample{Source: "cgroup v1", CPUSeconds: 1, CPUQuota: 0.5, CPUThrottledSeconds: 0.75,
				MemoryBytes: 8 << 20, MemoryLimit: 16 << 20, PageCacheBytes: 5 << 20},
		},
		{
			name: "cgroup v2 with limits",
			files: map[string]string{
				"proc/self/cgroup":          "0::/mure-s2\n",
				"cg/mure-s2/cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nnr_periods 10\nnr_throttled 2\nthrottled_usec 250000\n",
				"cg/mure-s2/cpu.max":        "50000 100000\n",
				"cg/mure-s2/memory.current": "4096\n",
				"cg/mure-s2/memory.max":     "8192\n",
				"cg/mure-s2/memory.stat":    "anon 1024\nfile 2048\nactive_file 1024\ninactive_file 1024\n",
			},
			want: Sample{Source: "cgroup v2", CPUSeconds: 1.5, CPUQuota: 0.5, CPUThrottledSeconds: 0.25,
				MemoryBytes: 4096, MemoryLimit: 8192, PageCacheBytes: 2048},
		},
		{
			name: "root cgroup is the machine",
			files: map[string]string{
				"proc/self/cgroup": "2:cpuacct:/\n1:cpu:/\n",
				"proc/stat":        "cpu  100 50 200 9999 77 5 5 0 0 0\ncpu0 1 1 1 1 1 1 1 1\n",
				"proc/meminfo":     "MemTotal:       2048 kB\nMemFree:  10 kB\nMemAvailable:   1024 kB\n",
			},
			want: Sample{Source: "machine", CPUSeconds: 3.6, MemoryBytes: 1 << 20, MemoryLimit: 2 << 20},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.files)
			got, err := open(filepath.Join(dir, "proc"), filepath.Join(dir, "cg")).Read()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadThisProcess(t *testing.T) {
	s, err := Open().Read()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUSeconds <= 0 || s.MemoryBytes <= 0 {
		t.Fatalf("this process's host uses no CPU or memory? %+v", s)
	}
}
