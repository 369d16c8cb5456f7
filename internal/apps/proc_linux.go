package apps

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// canStop: this system lets the reaper find a run's processes.
const canStop = true

// killMarked sends SIGKILL to every process whose initial environment
// (/proc/PID/environ) sets runEnv to a tag for which runOf returns a
// counter, and counts the kill there. Processes of other users cannot be
// read and are skipped; so are ones that exit meanwhile.
func killMarked(runOf func(tag string) *atomic.Int64) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	key := []byte(runEnv + "=")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		tag, ok := lookupEnv(env, key)
		if !ok {
			continue
		}
		if c := runOf(tag); c != nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			c.Add(1)
		}
	}
	return nil
}

// lookupEnv finds key (ending in '=') in a NUL-separated environment.
func lookupEnv(env, key []byte) (string, bool) {
	for len(env) > 0 {
		kv, rest, _ := bytes.Cut(env, []byte{0})
		if v, ok := bytes.CutPrefix(kv, key); ok {
			return string(v), true
		}
		env = rest
	}
	return "", false
}
