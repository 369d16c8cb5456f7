package sessions

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/bytesize"
)

// Types of session.
const (
	// TypeShell is a login shell (the account's, or Command) under a PTY.
	TypeShell = "shell"
	// TypeCommand is an operator's command (an editor, a REPL, a job)
	// under a PTY.
	TypeCommand = "command"
	// TypeWeb is a command that serves HTTP on a loopback port the node
	// gives it ($PORT), reached through the cluster by reverse proxy at
	// /web/ID/.
	TypeWeb = "web"
)

// Kind is a kind of session a node offers (mure serve --session-kind).
// Every node should declare the same kinds.
type Kind struct {
	// Name is what users ask for: mure session new --kind NAME.
	Name string `json:"name"`
	// Type is TypeShell, TypeCommand or TypeWeb.
	Type string `json:"type"`
	// Command is the program and its arguments (a shell's default: the
	// account's login shell).
	Command []string `json:"command,omitempty"`
	// Idle ends a session idle for this long — no input, no output and no
	// CPU use by its processes (0: never). Warn is how long before that its
	// clients are warned (0: a tenth of Idle).
	Idle time.Duration `json:"idle,omitempty"`
	Warn time.Duration `json:"warn,omitempty"`
	// RestartElsewhere starts the session anew on another node when its
	// node dies (its screen is lost; its files are in the replicated store).
	RestartElsewhere bool `json:"restart_elsewhere,omitempty"`
	// Limits bound the session's processes where the node can set cgroups.
	Limits Limits `json:"limits,omitzero"`
	// Place is the policy that picks the node of a new session asked for
	// without one (PlacePolicies; "": PlaceAsked).
	Place string `json:"place,omitempty"`
}

// Limits bound a session's processes (0: no bound).
type Limits struct {
	// MemoryBytes caps the processes' memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// CPUs caps their CPU time, in cores (0.5: half a core).
	CPUs float64 `json:"cpus,omitempty"`
	// Processes caps how many there may be at once (a fork bomb's end).
	Processes int `json:"processes,omitempty"`
}

// DefaultKind is the kind of a session asked for without one: a login
// shell.
var DefaultKind = Kind{Name: "shell", Type: TypeShell}

// RunKindName is the kind `mure run` asks for when the caller names none
// and the node offers it (else DefaultKind): paper 004's application
// session, which an operator places by its own policy
// (session-kind = app shell place=most-free-memory).
const RunKindName = "app"

// RunsAsked reports whether the kind runs a command the user asks for
// (mure run -- CMD): a shell kind without a command of its own, where the
// user could type the command anyway. Any other kind runs its own.
func (k Kind) RunsAsked() bool { return k.Type == TypeShell && len(k.Command) == 0 }

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ParseKind parses the flag form
//
//	NAME TYPE [idle=DURATION] [warn=DURATION] [restart=elsewhere]
//	     [memory=SIZE] [cpus=N] [processes=N] [place=POLICY] [-- COMMAND ARGS...]
//
// e.g. "edit command idle=2h memory=512MiB -- /usr/bin/vi". The command's
// words are split on spaces, with '...' and "..." quoting as in a shell
// (no escapes, no expansion).
func ParseKind(s string) (Kind, error) {
	head, cmd, _ := strings.Cut(s, " -- ")
	f := strings.Fields(head)
	if len(f) < 2 {
		return Kind{}, fmt.Errorf("session kind %q: want NAME TYPE [option=value...] [-- COMMAND ARGS...]", s)
	}
	words, err := splitWords(cmd)
	if err != nil {
		return Kind{}, fmt.Errorf("session kind %s: command: %w", f[0], err)
	}
	k := Kind{Name: f[0], Type: f[1], Command: words}
	for _, opt := range f[2:] {
		key, v, ok := strings.Cut(opt, "=")
		if !ok {
			return Kind{}, fmt.Errorf("session kind %s: option %q is not key=value", k.Name, opt)
		}
		var err error
		switch key {
		case "idle":
			k.Idle, err = time.ParseDuration(v)
		case "warn":
			k.Warn, err = time.ParseDuration(v)
		case "restart":
			if v != "elsewhere" && v != "never" {
				err = fmt.Errorf("want elsewhere or never")
			}
			k.RestartElsewhere = v == "elsewhere"
		case "memory":
			k.Limits.MemoryBytes, err = bytesize.Parse(v)
		case "cpus":
			k.Limits.CPUs, err = strconv.ParseFloat(v, 64)
		case "processes":
			k.Limits.Processes, err = strconv.Atoi(v)
		case "place":
			k.Place = v
		default:
			err = fmt.Errorf("unknown option (want idle, warn, restart, memory, cpus, processes or place)")
		}
		if err != nil {
			return Kind{}, fmt.Errorf("session kind %s: %s: %w", k.Name, key, err)
		}
	}
	return k, k.Validate()
}

// Validate checks a kind.
func (k Kind) Validate() error {
	if !kindName.MatchString(k.Name) {
		return fmt.Errorf("session kind %q: a name is 1-32 of a-z, 0-9, _ and -, starting with a letter", k.Name)
	}
	switch k.Type {
	case TypeShell:
	case TypeCommand, TypeWeb:
		if len(k.Command) == 0 {
			return fmt.Errorf("session kind %s: a %s kind needs a command (-- COMMAND ARGS...)", k.Name, k.Type)
		}
	default:
		return fmt.Errorf("session kind %s: type %q: want shell, command or web", k.Name, k.Type)
	}
	if k.Place != "" && !slices.Contains(PlacePolicies, k.Place) {
		return fmt.Errorf("session kind %s: place=%s: want one of %s", k.Name, k.Place, strings.Join(PlacePolicies, ", "))
	}
	if k.Idle < 0 || k.Warn < 0 || k.Limits.MemoryBytes < 0 || k.Limits.CPUs < 0 || k.Limits.Processes < 0 {
		return fmt.Errorf("session kind %s: durations and limits may not be negative", k.Name)
	}
	return nil
}

// warnAt is how long idle a session's clients are warned.
func (k Kind) warnAt() time.Duration {
	w := k.Warn
	if w == 0 {
		w = k.Idle / 10
	}
	return max(k.Idle-w, 0)
}

// splitWords splits s on spaces, keeping quoted runs ('...' or "...")
// together without their quotes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
