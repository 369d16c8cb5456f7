package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mure-dev/mure/internal/sessions/holder"
)

func init() {
	register("session-holder", "(internal) hold one session's terminal: started by a node as mure session-holder DIR", runHolder)
}

func runHolder(ctx context.Context, args []string, _, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: mure session-holder DIR (started by a node, not by hand)")
		return errUsage
	}
	return holder.Run(ctx, args[0])
}

func init() {
	register(holder.EnterCommand, "(internal) enter a session's cgroups, take its account and exec its program: started by a holder", runEnter)
}

func runEnter(_ context.Context, args []string, _, _ io.Writer) error {
	return holder.Enter(args) // returns only when the exec failed
}
