package sessions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/mure-dev/mure/internal/sessions/holder"
)

// kindFile keeps a local session's kind beside its holder, so that a
// restarted node culls it by the rules it started with.
const kindFile = "kind.json"

func writeKind(dir string, k Kind) error {
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, kindFile), b, 0o600)
}

func readKind(dir string) (Kind, error) {
	var k Kind
	b, err := os.ReadFile(filepath.Join(dir, kindFile))
	if err != nil {
		return k, err
	}
	return k, json.Unmarshal(b, &k)
}

// holderAlive reports whether the holder whose PID is in dir runs.
func holderAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, holder.PIDFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
