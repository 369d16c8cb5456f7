package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mure-dev/mure/internal/files"
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
		if err := printReadOrder(stdout, replicas); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "replicas:")
		return indentJSON(stdout, replicas)
	}
	return nil
}

// printReadOrder prints the order in which the node asked would read the
// file's valid copies, and why (files.Status.ReadOrder; absent from older
// nodes' answers, and then not printed).
func printReadOrder(w io.Writer, replicas json.RawMessage) error {
	var st struct {
		ReadOrder []files.ReadChoice `json:"read_order"`
	}
	if json.Unmarshal(replicas, &st) != nil || st.ReadOrder == nil {
		return nil
	}
	fmt.Fprintln(w, "read order (from the node asked):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, c := range st.ReadOrder {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", i+1, c.Node, or(c.Zone, "-"), c.Reason)
	}
	return tw.Flush()
}
