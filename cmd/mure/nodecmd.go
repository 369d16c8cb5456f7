package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mure-dev/mure/internal/node"
)

func init() { register("node", "leave, remove or list cluster nodes", runNode) }

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("node", "leave | remove ID | list",
		"leave:  the node given by --node (its first address) leaves the cluster gracefully\n"+
			"remove: remove a dead node from the cluster for good\n"+
			"list:   list the members of the cluster", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing subcommand")
	}
	c := cf.client()
	switch pos[0] {
	case "leave":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		return c.Leave(ctx)
	case "remove":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		return c.RemoveNode(ctx, pos[1])
	case "list":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		raw, err := c.Status(ctx)
		if err != nil {
			return err
		}
		var st node.Status
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("bad status document: %w", err)
		}
		if cf.json {
			return writeJSON(stdout, st.Members)
		}
		return printMembers(stdout, st.Members)
	}
	return usageError(fs, "unknown subcommand %q", pos[0])
}
