package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

func init() { register("stat", "show a file's metadata and replicas", runStat) }

func runStat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("stat", "PATH", "Show a file's metadata and the state of its replicas.", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 1, 1); err != nil {
		return err
	}
	c := cf.client()
	info, err := c.Stat(ctx, pos[0])
	if err != nil {
		return err
	}
	replicas, rerr := c.FileStatus(ctx, pos[0])
	if rerr != nil {
		fmt.Fprintf(stderr, "mure stat: replica state: %v\n", rerr)
	}
	if cf.json {
		return writeJSON(stdout, struct {
			Info     any             `json:"info"`
			Replicas json.RawMessage `json:"replicas,omitempty"`
		}{info, replicas})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "path:\t%s\n", info.Path)
	fmt.Fprintf(tw, "version:\t%d\n", info.Version)
	fmt.Fprintf(tw, "etag:\t%s\n", info.ETag)
	fmt.Fprintf(tw, "size:\t%d\n", info.Size)
	fmt.Fprintf(tw, "sha256:\t%s\n", info.SHA256)
	mod := "-"
	if !info.Modified.IsZero() {
		mod = info.Modified.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "modified:\t%s\n", mod)
	if err := tw.Flush(); err != nil {
		return err
	}
	if replicas != nil {
		fmt.Fprintln(stdout, "replicas:")
		return indentJSON(stdout, replicas)
	}
	return nil
}
