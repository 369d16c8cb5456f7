package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/mure-dev/mure/client"
)

func init() {
	register("session", "persistent sessions: new, ls, attach, kill (docs/sessions.md)", runSession)
}

const sessionHelp = `Persistent sessions: a login shell, a command or a web app that keeps
running when its client goes, resumed from any node.

  mure session new [--kind K] [--on NODE] [--parent ID] [--json]
                                                     start one (prints its ID); --parent: it ends with that session
  mure session ls [--all] [--json]                   list yours (--all: everyone's, admins)
  mure session attach [--detach-key KEY] ID          attach this terminal (KEY detaches)
  mure session kill ID                               end it

Credentials as for every command: MURE_USER and MURE_PASSWORD, or a token.`

func runSession(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("session", "new|ls|attach|kill [ID]", sessionHelp, stderr)
	kind := fs.String("kind", "", "the session's kind (default: shell)")
	parent := fs.String("parent", "", "the session `ID` of yours this one belongs to (paper 004's application session): it ends with it")
	on := fs.String("on", "", "start the session on this node `ID` (default: the node asked)")
	all := fs.Bool("all", false, "ls: every user's sessions (admins)")
	detach := fs.String("detach-key", "ctrl-]", "attach: the key that detaches (ctrl-LETTER, ctrl-], or none)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "want new, ls, attach ID or kill ID")
	}
	c := cf.client()
	switch pos[0] {
	case "new":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		cols, rows := termSize()
		s, err := c.StartSession(ctx, client.NewSession{Kind: *kind, Node: *on, Parent: *parent, Cols: cols, Rows: rows})
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, s)
		}
		_, err = fmt.Fprintf(stdout, "%s\t(%s on node %s; mure session attach %s)\n", s.ID, s.Kind, s.Node, s.ID)
		return err
	case "ls":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		list, err := c.Sessions(ctx, *all)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, list)
		}
		return printSessions(stdout, list)
	case "attach":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		key, err := parseDetachKey(*detach)
		if err != nil {
			return usageError(fs, "--detach-key: %v", err)
		}
		return attach(ctx, c, pos[1], key, false, stdout, stderr)
	case "kill":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		return c.KillSession(ctx, pos[1])
	}
	return usageError(fs, "unknown action %q: want new, ls, attach or kill", pos[0])
}

func printSessions(w io.Writer, list []client.Session) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tKIND\tNODE\tSTATE\tAGE\tIDLE\tMEMORY\tCPU\tCLIENTS\tPLACED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1fMiB\t%.1fs\t%d\t%s\n", s.ID, s.User, s.Kind, s.Node, s.State,
			time.Duration(s.AgeSeconds)*time.Second, time.Duration(s.IdleSeconds)*time.Second,
			float64(s.MemoryBytes)/(1<<20), s.CPUSeconds, s.Clients, placedWhy(s.Node, s.Placement))
	}
	return tw.Flush()
}

// placedWhy says in a few words why a session is on node: the policy,
// the decider, and each candidate's figure the policy compares (the
// chosen node starred; +N: placements in flight not counted in it yet).
func placedWhy(node string, p *client.Placement) string {
	if p == nil {
		return "asked"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s:", p.Policy, p.Decider)
	for _, n := range p.Nodes {
		star := ""
		if n.Node == node {
			star = "*"
		}
		var fig string
		switch p.Policy {
		case "most-free-memory":
			fig = fmt.Sprintf("%.0fMiB free", float64(n.FreeMemory)/(1<<20))
		case "least-load":
			fig = fmt.Sprintf("cpu %.0f%%", 100*n.CPU)
		default:
			fig = fmt.Sprintf("%d sessions", n.Sessions)
		}
		if n.InFlight > 0 {
			fig += fmt.Sprintf("+%d", n.InFlight)
		}
		fmt.Fprintf(&b, " %s%s %s,", star, n.Node, fig)
	}
	return strings.TrimSuffix(b.String(), ",")
}

// termSize is this terminal's size (0x0 when stdout is not one).
func termSize() (uint16, uint16) {
	w, h, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil || w <= 0 || h <= 0 {
		return 0, 0
	}
	return uint16(min(w, 65535)), uint16(min(h, 65535))
}

// parseDetachKey turns "ctrl-]" or "ctrl-d" into its byte; "none" is -1.
func parseDetachKey(s string) (int, error) {
	s = strings.ToLower(s)
	if s == "none" {
		return -1, nil
	}
	k, ok := strings.CutPrefix(s, "ctrl-")
	if !ok || len(k) != 1 || !(k[0] >= 'a' && k[0] <= 'z' || strings.ContainsRune("[\\]^_", rune(k[0]))) {
		return 0, fmt.Errorf("%q: want ctrl-LETTER, ctrl-] (and [ \\ ^ _), or none", s)
	}
	c := k[0]
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	return int(c & 0x1f), nil
}

// attach runs this terminal as a client of session id until the detach
// key, the session's end, or a cut connection: on the alternate screen,
// or inline (mure run: the session's output stays in the terminal).
func attach(ctx context.Context, c *client.Client, id string, detachKey int, inline bool, stdout, stderr io.Writer) error {
	cols, rows := termSize()
	conn, err := c.AttachSession(ctx, id, cols, rows)
	if err != nil {
		return err
	}
	defer conn.Close()
	fd := int(os.Stdin.Fd())
	if term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer term.Restore(fd, old)
		if !inline {
			fmt.Fprint(stdout, "\x1b[?1049h") // the session's screen, on the alternate screen
			defer fmt.Fprint(stdout, "\x1b[?1049l")
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	go func() { // the session → this terminal
		for {
			p, err := conn.Read(ctx)
			if err != nil {
				done <- err
				return
			}
			if _, err := stdout.Write(p); err != nil {
				done <- err
				return
			}
		}
	}()
	go func() { // this terminal → the session
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			p := buf[:n]
			if detachKey >= 0 {
				if i := strings.IndexByte(string(p), byte(detachKey)); i >= 0 {
					_ = conn.Write(ctx, p[:i])
					done <- client.ErrDetached
					return
				}
			}
			if len(p) > 0 {
				if werr := conn.Write(ctx, p); werr != nil {
					done <- werr
					return
				}
			}
			if err != nil {
				done <- client.ErrDetached
				return
			}
		}
	}()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		select {
		case <-winch:
			if cols, rows := termSize(); cols > 0 {
				_ = conn.Resize(ctx, cols, rows)
			}
		case n := <-conn.Notice:
			fmt.Fprintf(stderr, "\r\n[%s]\r\n", n)
		case err := <-done:
			cancel()
			if !inline {
				fmt.Fprint(stdout, "\x1b[?1049l")
			}
			return endAttach(err, conn, id, stderr)
		case <-ctx.Done():
			return nil
		}
	}
}

func endAttach(err error, conn *client.SessionConn, id string, stderr io.Writer) error {
	switch {
	case errors.Is(err, client.ErrSessionEnded):
		e := conn.Exit
		if e.Error != "" {
			fmt.Fprintf(stderr, "[session %s ended: %s]\r\n", id, e.Error)
		} else {
			fmt.Fprintf(stderr, "[session %s ended with status %d]\r\n", id, e.Code)
		}
		return nil
	case errors.Is(err, client.ErrDetached):
		fmt.Fprintf(stderr, "[detached from session %s; mure session attach %s resumes it]\r\n", id, id)
		return nil
	}
	return err
}
