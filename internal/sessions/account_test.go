package sessions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A node that cannot switch accounts says so, with what to do. Run as
// root, the test runs itself again as the account nobody.
func TestCanSwitchRefusesWithoutPrivilege(t *testing.T) {
	if os.Getenv("MURE_TEST_CANSWITCH") == "1" {
		fmt.Println("RESULT:", CanSwitch())
		return
	}
	if os.Geteuid() != 0 {
		if err := CanSwitch(); err != nil && !errors.Is(err, ErrCannotSwitch) {
			t.Fatalf("CanSwitch: %v, want ErrCannotSwitch", err)
		}
		t.Skip("not root: cannot run the check as another account")
	}
	if CanSwitch() != nil {
		t.Fatal("root cannot switch accounts")
	}
	// The test binary, where the account nobody may run it.
	dir, err := os.MkdirTemp("", "mure-canswitch-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sessions.test")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestCanSwitchRefusesWithoutPrivilege$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MURE_TEST_CANSWITCH=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run as nobody: %v: %s", err, out)
	}
	for _, want := range []string{"cannot switch Unix accounts", "uid 65534", "CAP_SETUID"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("as nobody: %s; want %q in the error", out, want)
		}
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// An account of uid 0 or of this process is refused before any lookup of
// its shell or groups matters.
func TestLookupAccountRefusesPrivileged(t *testing.T) {
	if _, err := lookupAccount("", "root"); !errors.Is(err, ErrPrivileged) {
		t.Errorf("root: %v, want ErrPrivileged", err)
	}
	if _, err := lookupAccount("mure-", "no-such-user-here"); !errors.Is(err, ErrNoAccount) || !strings.Contains(err.Error(), "useradd") {
		t.Errorf("missing account: %v, want ErrNoAccount saying how to create it", err)
	}
}
