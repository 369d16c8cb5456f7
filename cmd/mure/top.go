package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/node"
)

func init() { register("top", "watch every node's figures, live, in the terminal", runTop) }

func runTop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("top", "", "Show every node of the cluster, its state and roles, and its figures now and over the\n"+
		"last minute (CPU, memory, disk, network, requests, latency, files), refreshed every\n"+
		"second until Ctrl-C: the dashboard's data (docs/dashboard.md) for a terminal. With\n"+
		"several --node addresses it carries on through another when one dies.", stderr)
	interval := fs.Duration("interval", time.Second, "refresh every `D`")
	once := fs.Bool("once", false, "print one screen and exit (for scripts: no terminal control)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	c := cf.client()
	set := history.NewSet(0)
	since := time.Now().Unix() - sparkSeconds - 1
	if !*once {
		// The alternate screen, cursor hidden; both restored on the way out.
		fmt.Fprint(stdout, "\x1b[?1049h\x1b[?25l")
		defer fmt.Fprint(stdout, "\x1b[?25h\x1b[?1049l")
	}
	t := time.NewTicker(max(*interval, 100*time.Millisecond))
	defer t.Stop()
	for {
		var st node.Status
		var problem string
		raw, err := c.Status(ctx)
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		if err != nil {
			problem = "status: " + err.Error()
		} else if raw, err := c.History(ctx, since); err != nil {
			problem = "history: " + err.Error()
		} else {
			var d history.Dump
			if err := json.Unmarshal(raw, &d); err != nil {
				problem = "history: " + err.Error()
			}
			for id, nd := range d.Nodes {
				set.Series(id).Merge(nd.Fine, nd.Coarse)
			}
			// A peer's points reach the node a second after its own:
			// ask again for a few seconds back (the ring drops repeats).
			since = time.Now().Unix() - 5
		}
		if *once {
			if problem != "" {
				return fmt.Errorf("%s", problem)
			}
			return renderTop(stdout, st, set, time.Now(), terminalWidth(), "")
		}
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J")
		_ = renderTop(&b, st, set, time.Now(), terminalWidth(), problem)
		fmt.Fprint(stdout, strings.ReplaceAll(b.String(), "\n", "\r\n"))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// terminalWidth is stdout's width in columns (100 when it is no
// terminal).
func terminalWidth() int {
	if ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	return 100
}
