package main

import (
	"context"
	"fmt"
	"io"
)

func init() { register("cache", "purge objects from the caching proxy (mure serve --proxy)", runCache) }

func runCache(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("cache", "purge [--prefix] URL...",
		"Purge objects from the caching proxy of every node: URL is what clients ask the\n"+
			"proxy for (http://HOST/PATH), or a PATH of its default origin. Admin only; ask a\n"+
			"node that runs the proxy. Nodes that are down apply the purge when they return.", stderr)
	prefix := fs.Bool("prefix", false, "purge every object whose path starts with URL's")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || pos[0] != "purge" {
		return usageError(fs, "want purge URL...")
	}
	c := cf.client()
	for _, target := range pos[1:] {
		r, err := c.PurgeCache(ctx, target, *prefix)
		if err != nil {
			return fmt.Errorf("purge %s: %w", target, err)
		}
		if cf.json {
			if err := writeJSON(stdout, r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "purged %s (key %q, %d objects removed on this node, recorded: %v)\n", target, r.Key, r.RemovedHere, r.Recorded)
	}
	return nil
}
