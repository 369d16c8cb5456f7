package holder

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files in a holder's directory.
const (
	SpecFile = "spec.json" // what to run (written by the node)
	SockFile = "sock"      // the holder's socket
	PIDFile  = "pid"       // the holder's process ID
	ExitFile = "exit.json" // how the session ended (written by the holder)
	LogFile  = "holder.log"
)

// Spec is what a holder runs: the node writes it to DIR/spec.json before
// starting the holder.
type Spec struct {
	// ID is the session's ID.
	ID string `json:"id"`
	// Argv is the program and its arguments; Env its whole environment
	// (nothing of the node's is inherited); Dir its working directory.
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// UID, GID and Groups are the Unix account the program runs as. The
	// holder refuses UID 0 and its own UID.
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	// Size is the terminal's first size.
	Size Size `json:"size"`
	// Scrollback is how many lines leaving the screen the emulator keeps.
	Scrollback int `json:"scrollback"`
	// Cgroups are cgroup directories (one per controller, cgroup v1, or one
	// for v2) the program starts inside (enter.go); empty: none.
	Cgroups []string `json:"cgroups,omitempty"`
}

// Errors of the spec.
var (
	// ErrPrivileged: the spec asks for root or for the holder's own account.
	ErrPrivileged = errors.New("holder: a session never runs as root or as the account running mure")
)

func (s *Spec) validate() error {
	switch {
	case s.ID == "" || len(s.Argv) == 0:
		return errors.New("holder: the spec needs an id and a program")
	case s.UID == 0 || s.GID == 0 || s.UID == uint32(os.Geteuid()):
		return fmt.Errorf("%w (uid %d, gid %d)", ErrPrivileged, s.UID, s.GID)
	}
	if sz, ok := s.Size.Clamp(); ok {
		s.Size = sz
	} else {
		s.Size = Size{Cols: 80, Rows: 24}
	}
	return nil
}

// WriteSpec writes s into dir.
func WriteSpec(dir string, s Spec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SpecFile), b, 0o600)
}

func readSpec(dir string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("holder: %s: %w", SpecFile, err)
	}
	return s, s.validate()
}

// Exit is how a session ended, in DIR/exit.json and the exit frame.
type Exit struct {
	// Code is the program's exit status (-1: killed by a signal, or it
	// never started).
	Code int `json:"code"`
	// Error says why the program could not start, or how it was ended.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

// ReadExit returns the exit record in dir, if the holder wrote one.
func ReadExit(dir string) (Exit, bool) {
	var e Exit
	b, err := os.ReadFile(filepath.Join(dir, ExitFile))
	if err != nil || json.Unmarshal(b, &e) != nil {
		return e, false
	}
	return e, true
}

func writeExit(dir string, e Exit) {
	b, _ := json.Marshal(e)
	_ = os.WriteFile(filepath.Join(dir, ExitFile), b, 0o600)
}
