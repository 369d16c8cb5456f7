package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
)

// fioJob is one fio run inside a host: what it does and the limit it must
// meet (bytes or I/Os per second).
type fioJob struct {
	name   string
	args   []string
	iops   bool  // compare IOPS, not bandwidth
	limit  int64 // the rate the job must reach, within ±15%
	writes bool
}

// fioJobs are the jobs checking a disk with limits lim: sequential reads
// and writes, direct and buffered, sized to last about 2.5 s each (4 s the
// buffered write) (the throttle lets a slice's worth through at first), and
// random 4 KiB reads and writes for the IOPS limits (before the buffered
// jobs: direct I/O drops the cached pages it touches). Buffered writes end
// with an fsync counted in the time (what reached the disk); buffered
// reads start with the file's pages dropped (fio's invalidate).
func fioJobs(file string, lim DiskLimits) []fioJob {
	size := func(rate int64, tenths int64) string { return fmt.Sprintf("--size=%dk", rate*tenths/10/1024/128*128) }
	// direct I/O keeps 8 requests in flight, so that the throttle, not the
	// latency of a loaded 2-core machine, sets the pace; buffered writes
	// last longer, as writeback starts only once a tenth of the host's
	// memory is dirty (dirty.go) and the disk idles until then
	seq := func(rw string, direct int, rate int64) []string {
		tenths := int64(25)
		if direct == 0 && rw == "write" {
			tenths = 40
		}
		engine := []string{"--ioengine=psync"}
		if direct == 1 {
			engine = []string{"--ioengine=libaio", "--iodepth=8"}
		}
		return append(engine, "--rw="+rw, "--bs=128k", fmt.Sprintf("--direct=%d", direct), size(rate, tenths), "--end_fsync=1", "--invalidate=1")
	}
	rnd := func(rw string) []string {
		return []string{"--ioengine=libaio", "--iodepth=8", "--rw=" + rw, "--bs=4k", "--direct=1", "--size=16m", "--runtime=2", "--time_based"}
	}
	return []fioJob{
		{name: "direct write", args: seq("write", 1, lim.WriteBPS), limit: lim.WriteBPS, writes: true},
		{name: "direct read", args: seq("read", 1, lim.ReadBPS), limit: lim.ReadBPS},
		{name: "random read", args: rnd("randread"), iops: true, limit: lim.ReadIOPS},
		{name: "random write", args: rnd("randwrite"), iops: true, limit: lim.WriteIOPS, writes: true},
		{name: "buffered write", args: seq("write", 0, lim.WriteBPS), limit: lim.WriteBPS, writes: true},
		{name: "buffered read", args: seq("read", 0, lim.ReadBPS), limit: lim.ReadBPS},
	}
}

// runFio runs a fio job inside host h on file and returns its rate.
func runFio(ctx context.Context, tb *Testbed, h *Host, file string, j fioJob) (float64, error) {
	args := append([]string{"--name=t", "--filename=" + file, "--output-format=json"}, j.args...)
	var out, errOut bytes.Buffer
	cmd := tb.Command(ctx, h, "fio", args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("fio %s: %w: %s", j.name, err, errOut.String())
	}
	var rep struct {
		Jobs []struct {
			Read, Write struct {
				BW   float64 `json:"bw_bytes"`
				IOPS float64 `json:"iops"`
			}
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Jobs) != 1 {
		return 0, fmt.Errorf("fio %s: bad report (%v): %.200s", j.name, err, out.String())
	}
	st := rep.Jobs[0].Read
	if j.writes {
		st = rep.Jobs[0].Write
	}
	if j.iops {
		return st.IOPS, nil
	}
	return st.BW, nil
}

// checkDiskRates runs the fio jobs inside every server host at once and
// checks each against that host's own limits. The nodes are stopped
// meanwhile: an idle node's raft and catalogue commits take some 70 of its
// disk's IOPS, which fio would not get.
func checkDiskRates(t *testing.T, ctx context.Context, tb *Testbed) {
	t.Helper()
	if _, err := exec.LookPath("fio"); err != nil {
		t.Fatalf("the disk check needs fio (Debian: fio; scripts/test.sh installs it): %v", err)
	}
	for _, h := range tb.Servers() {
		if err := tb.Signal(h, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, h := range tb.Servers() {
			if err := tb.Signal(h, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
		if err := waitMembers(ctx, tb.Servers(), tb.AdminToken()); err != nil {
			t.Fatalf("after the disk check: %v", err)
		}
	}()
	var wg sync.WaitGroup
	for _, h := range tb.Servers() {
		wg.Go(func() {
			file := filepath.Join(h.Disk.Mount, "fio-test")
			for _, j := range fioJobs(file, h.Disk.Limits) {
				// a job that misses its rate runs once more: the machine's
				// 2 cores and its disk are shared with whatever else runs
				for try := 1; ; try++ {
					got, err := runFio(ctx, tb, h, file, j)
					if err != nil {
						t.Errorf("%s: %v", h.Name, err)
						return
					}
					unit := "MB/s"
					g, l := got/1e6, float64(j.limit)/1e6
					if j.iops {
						unit, g, l = "IOPS", got, float64(j.limit)
					}
					t.Logf("%s %s: %.1f %s (limit %.0f)", h.Name, j.name, g, unit, l)
					if math.Abs(got-float64(j.limit)) <= 0.15*float64(j.limit) {
						break
					}
					if try == 2 {
						t.Errorf("%s %s: %.1f %s twice off, want %.0f ±15%%", h.Name, j.name, g, unit, l)
						break
					}
				}
			}
		})
	}
	wg.Wait()
}

// memberLoads returns the load figures every member gossips, as node h sees
// them, by HTTP address.
func memberLoads(ctx context.Context, h *Host) (map[string]cluster.Load, error) {
	var st struct {
		Members []cluster.Member `json:"members"`
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	loads := map[string]cluster.Load{}
	for _, m := range st.Members {
		if m.Load != nil {
			loads[m.HTTPAddr] = *m.Load
		}
	}
	return loads, nil
}

// checkSkewedCPU loads server 1 alone with a CPU burner and checks that its
// gossiped figures move (CPU near its quota, throttled) while server 2's,
// read at the same moments, stay low: the means of ten readings, each
// figure being over one 100 ms load interval.
func checkSkewedCPU(t *testing.T, ctx context.Context, tb *Testbed) {
	t.Helper()
	s1, s2 := tb.Servers()[0], tb.Servers()[1]
	burn := tb.Command(ctx, s1, "timeout", "8", "sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = burn.Process.Kill(); _ = burn.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		loads, err := memberLoads(ctx, s2)
		if l := loads[s1.HTTP()]; err == nil && l.CPU > 0.8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("loaded host s1 never showed its load: %+v (%v)", loads, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const n = 10
	var m1, m2 cluster.Load
	for range n {
		time.Sleep(150 * time.Millisecond)
		loads, err := memberLoads(ctx, s2)
		if err != nil {
			t.Fatal(err)
		}
		l1, l2 := loads[s1.HTTP()], loads[s2.HTTP()]
		m1.CPU, m1.RunQueue = m1.CPU+l1.CPU/n, m1.RunQueue+l1.RunQueue/n
		m2.CPU, m2.RunQueue = m2.CPU+l2.CPU/n, m2.RunQueue+l2.RunQueue/n
	}
	t.Logf("s1 loaded: CPU %.2f of its quota, run queue (throttled share) %.2f; s2 idle: CPU %.2f, run queue %.2f",
		m1.CPU, m1.RunQueue, m2.CPU, m2.RunQueue)
	if m1.CPU < 0.8 || m1.RunQueue < 0.5 {
		t.Errorf("loaded host s1's figures did not move: CPU %.2f, run queue %.2f", m1.CPU, m1.RunQueue)
	}
	if m2.CPU > 0.4 || m2.RunQueue > 0.25 {
		t.Errorf("idle host s2 reports load: CPU %.2f, run queue %.2f", m2.CPU, m2.RunQueue)
	}
}

// checkPageCacheFree checks that server 1's node counts the page cache its
// host holds (the fio file just read) as free memory.
func checkPageCacheFree(t *testing.T, ctx context.Context, tb *Testbed) {
	t.Helper()
	s1 := tb.Servers()[0]
	host, err := nodeHost(ctx, s1)
	if err != nil {
		t.Fatal(err)
	}
	if host.MemoryLimit != int64(tb.Config.MemoryMB)<<20 || host.PageCacheBytes < 10<<20 {
		t.Fatalf("s1 after reading a file through its page cache: %+v, want a %d MB limit and page cache", host, tb.Config.MemoryMB)
	}
	loads, err := memberLoads(ctx, s1)
	if err != nil {
		t.Fatal(err)
	}
	free := loads[s1.HTTP()].FreeMemory
	t.Logf("s1: %d MB in use, %d MB of it page cache, limit %d MB; gossips %d MB free",
		host.MemoryBytes>>20, host.PageCacheBytes>>20, host.MemoryLimit>>20, free>>20)
	if without := host.MemoryLimit - host.MemoryBytes; free < without+host.PageCacheBytes/2 || free > host.MemoryLimit {
		t.Errorf("s1 gossips %d MB free: want about limit - use + page cache (%d MB), not limit - use (%d MB)",
			free>>20, (without+host.PageCacheBytes)>>20, without>>20)
	}
}

// checkFullDisk fills server 1's disk and checks that its node refuses a
// write with 507 no_space and keeps what it had, and takes writes again
// once there is room.
func checkFullDisk(t *testing.T, ctx context.Context, tb *Testbed) {
	t.Helper()
	s1 := tb.Servers()[0]
	before := bytes.Repeat([]byte("kept "), 20000)
	if code, body := put(ctx, s1, "/files/full-disk/before", before); code/100 != 2 {
		t.Fatalf("put before the disk filled: %d %s", code, body)
	}
	if err := tb.Fill(s1, 0); err != nil {
		t.Fatal(err)
	}
	code, body := put(ctx, s1, "/files/full-disk/after", bytes.Repeat([]byte("x"), 4<<20))
	if code != http.StatusInsufficientStorage || !strings.Contains(body, `"no_space"`) {
		t.Errorf("put on a full disk: %d %s, want 507 no_space", code, body)
	}
	if got, err := get(ctx, s1, "/files/full-disk/before"); err != nil || !bytes.Equal(got, before) {
		t.Errorf("the file written before the disk filled: %d bytes, %v; want it whole", len(got), err)
	}
	if err := tb.Unfill(s1); err != nil {
		t.Fatal(err)
	}
	if code, body := put(ctx, s1, "/files/full-disk/after", []byte("room again")); code/100 != 2 {
		t.Errorf("put after the disk was emptied: %d %s", code, body)
	}
}

func put(ctx context.Context, h *Host, path string, data []byte) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+h.HTTP()+path, bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func get(ctx context.Context, h *Host, path string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
