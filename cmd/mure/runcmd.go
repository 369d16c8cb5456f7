package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mure-dev/mure/client"
)

func init() {
	register("run", "start an application session from inside a session, placed by its kind's policy (docs/sessions.md)", runRun)
}

const runHelp = `Start CMD as an application session (paper 004's APS) and show its
terminal here. From inside a session it belongs to that session ($MURE_SESSION):
placed by its kind's policy (often on another node), resumed and ended with it,
listed by mure session ls. The kind is "app" where the nodes offer it, else
"shell"; CMD runs through the account's login shell. Ctrl-] detaches: the
application runs on (mure session attach ID resumes it).

Inside a session no password is needed: the session's credential
($MURE_SESSION_TOKEN) may start and attach to its own children, nothing else.`

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("run", "-- CMD [ARGS...]", runHelp, stderr)
	kind := fs.String("kind", "", `the session's kind (default: "app" where offered, else "shell")`)
	on := fs.String("on", "", "start it on this node `ID` (default: where its kind's policy says)")
	parent := fs.String("parent", os.Getenv("MURE_SESSION"), "the session `ID` it belongs to (default: the session this runs in, $MURE_SESSION)")
	detached := fs.Bool("d", false, "do not attach: print the session's ID and return")
	detach := fs.String("detach-key", "ctrl-]", "the key that detaches (ctrl-LETTER, ctrl-], or none)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "want a command: mure run -- CMD [ARGS...]")
	}
	key, err := parseDetachKey(*detach)
	if err != nil {
		return usageError(fs, "--detach-key: %v", err)
	}
	c := cf.client()
	cols, rows := termSize()
	s, err := c.StartSession(ctx, client.NewSession{Kind: *kind, Node: *on, Parent: *parent, Command: pos, Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	switch {
	case cf.json:
		if err := writeJSON(stdout, s); err != nil || *detached {
			return err
		}
	case *detached:
		_, err = fmt.Fprintf(stdout, "%s\t(%s on node %s; mure session attach %s)\n", s.ID, s.Kind, s.Node, s.ID)
		return err
	default:
		fmt.Fprintf(stderr, "[mure run: session %s (%s) on node %s; %s detaches]\r\n", s.ID, s.Kind, s.Node, *detach)
	}
	return attach(ctx, c, s.ID, key, true, stdout, stderr)
}
