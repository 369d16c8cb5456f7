package holder

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// EnterCommand is the subcommand of this binary that puts itself into a
// session's cgroups and then becomes its program (see Enter).
const EnterCommand = "session-exec"

// A program put into its cgroups after it starts may fork first, and
// what it forks escapes the limits (a fork bomb under processes=8 got 8
// of 30 out). So the program starts inside its groups: on cgroup v2 the
// kernel clones it there (SysProcAttr.CgroupFD); on v1, which has no such
// clone, the holder starts this binary as a shim (`mure session-exec`)
// that, still as the holder's account, writes its own pid into each
// group, then takes the session's account and execs the program: every
// process the program makes is born inside.

// startCmd returns the command that runs the spec's program (path
// resolved) as the session's account, inside its cgroups, and a function
// that frees what it opened once the program started.
func startCmd(s Spec, path string) (*exec.Cmd, *syscall.SysProcAttr, func(), error) {
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true}
	done := func() {}
	cred := &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: s.Groups}
	switch {
	case len(s.Cgroups) == 0:
	case len(s.Cgroups) == 1 && isV2(s.Cgroups[0]):
		f, err := os.Open(s.Cgroups[0])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open the session's cgroup: %w", err)
		}
		attrs.UseCgroupFD, attrs.CgroupFD = true, int(f.Fd())
		done = func() { f.Close() }
	default:
		self, err := os.Executable()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("find this executable to enter the session's cgroups: %w", err)
		}
		args := []string{EnterCommand, "--uid", strconv.FormatUint(uint64(s.UID), 10), "--gid", strconv.FormatUint(uint64(s.GID), 10), "--dir", s.Dir}
		if len(s.Groups) > 0 {
			gs := make([]string, len(s.Groups))
			for i, g := range s.Groups {
				gs[i] = strconv.FormatUint(uint64(g), 10)
			}
			args = append(args, "--groups", strings.Join(gs, ","))
		}
		for _, cg := range s.Cgroups {
			args = append(args, "--cgroup", cg)
		}
		args = append(args, "--", path)
		cmd := exec.Command(self, append(args, s.Argv[1:]...)...)
		cmd.Env = s.Env
		return cmd, attrs, done, nil // the shim switches accounts itself
	}
	attrs.Credential = cred
	cmd := exec.Command(path, s.Argv[1:]...)
	cmd.Args[0] = s.Argv[0]
	cmd.Env, cmd.Dir = s.Env, s.Dir
	return cmd, attrs, done, nil
}

func isV2(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	return err == nil
}

// Enter is the shim's main (`mure session-exec --uid U --gid G [--groups
// G,G] [--dir D] [--cgroup DIR]... -- PROGRAM ARGS...`): it writes its own
// pid into each cgroup, takes the account, changes to the directory and
// execs the program with its own environment. It returns only on error.
func Enter(args []string) error {
	fs := flag.NewFlagSet(EnterCommand, flag.ContinueOnError)
	uid := fs.Int("uid", -1, "the account's uid")
	gid := fs.Int("gid", -1, "the account's gid")
	groups := fs.String("groups", "", "supplementary groups, comma-separated")
	dir := fs.String("dir", "", "working directory")
	var cgroups []string
	fs.Func("cgroup", "a cgroup directory to enter (repeat)", func(v string) error { cgroups = append(cgroups, v); return nil })
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	switch {
	case len(argv) == 0:
		return errors.New("session-exec: no program")
	case *uid <= 0 || *gid <= 0 || *uid == os.Geteuid():
		return fmt.Errorf("%w (uid %d, gid %d)", ErrPrivileged, *uid, *gid)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, cg := range cgroups {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), pid, 0o644); err != nil {
			return fmt.Errorf("session-exec: enter the session's cgroup: %w", err)
		}
	}
	var gs []int
	for _, g := range strings.Split(*groups, ",") {
		if g == "" {
			continue
		}
		n, err := strconv.Atoi(g)
		if err != nil {
			return fmt.Errorf("session-exec: bad group %q", g)
		}
		gs = append(gs, n)
	}
	// Groups first: after setuid the shim could no longer change them.
	if err := syscall.Setgroups(gs); err != nil {
		return fmt.Errorf("session-exec: setgroups: %w", err)
	}
	if err := syscall.Setgid(*gid); err != nil {
		return fmt.Errorf("session-exec: setgid %d: %w", *gid, err)
	}
	if err := syscall.Setuid(*uid); err != nil {
		return fmt.Errorf("session-exec: setuid %d: %w", *uid, err)
	}
	if *dir != "" {
		if err := os.Chdir(*dir); err != nil {
			return fmt.Errorf("session-exec: %w", err)
		}
	}
	return syscall.Exec(argv[0], argv, os.Environ())
}
