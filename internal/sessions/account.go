package sessions

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Account is the Unix account a session runs as.
type Account struct {
	Name        string
	UID, GID    uint32
	Groups      []uint32
	Home, Shell string
}

// DefaultAccountPrefix names a user's account: mure user alice runs her
// sessions as the Unix account mure-alice.
const DefaultAccountPrefix = "mure-"

// lookupAccount finds the account of mure user u (prefix+u) and checks
// that it may run a session: not root, not this process's account.
func lookupAccount(prefix, u string) (Account, error) {
	name := prefix + u
	pw, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("%w: mure user %s runs sessions as the Unix account %s, which this node does not have: create it on every node that runs sessions (useradd -m -s /bin/bash %s)",
			ErrNoAccount, u, name, name)
	}
	uid, err1 := strconv.ParseUint(pw.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(pw.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return Account{}, fmt.Errorf("%w: account %s has uid %q gid %q", ErrNoAccount, name, pw.Uid, pw.Gid)
	}
	if uid == 0 || gid == 0 || uid == uint64(os.Geteuid()) {
		return Account{}, fmt.Errorf("%w: the account %s is uid %d gid %d", ErrPrivileged, name, uid, gid)
	}
	a := Account{Name: name, UID: uint32(uid), GID: uint32(gid), Home: pw.HomeDir, Shell: loginShell(name)}
	if gids, err := pw.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && n != 0 {
				a.Groups = append(a.Groups, uint32(n))
			}
		}
	}
	return a, nil
}

// loginShell reads the account's shell from /etc/passwd (os/user does not
// give it); /bin/sh when it cannot.
func loginShell(name string) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "/bin/sh"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), ":")
		if len(fs) == 7 && fs[0] == name && fs[6] != "" {
			return fs[6]
		}
	}
	return "/bin/sh"
}

// capSetUID and capSetGID are the capabilities' bits in CapEff.
const (
	capSetGID = 6
	capSetUID = 7
)

// CanSwitch reports whether this process may start programs as another
// account (root, or CAP_SETUID and CAP_SETGID), with a message saying
// what to do when not.
func CanSwitch() error {
	if os.Geteuid() == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
				caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err == nil && caps&(1<<capSetUID) != 0 && caps&(1<<capSetGID) != 0 {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%w: mure runs as uid %d without CAP_SETUID and CAP_SETGID, so it cannot start a session as its user's own account (and never runs one as itself): run mure as root, or grant it those capabilities (setcap cap_setuid,cap_setgid+ep, or AmbientCapabilities= in its systemd unit)",
		ErrCannotSwitch, os.Geteuid())
}
