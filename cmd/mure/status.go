package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

func init() { register("status", "show the cluster state", runStatus) }

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("status", "", "Show the state of the cluster as seen by a node.", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	raw, err := cf.client().Status(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return indentJSON(stdout, raw)
	}
	st, err := decodeObject(raw)
	if err != nil {
		return err
	}
	return printStatus(stdout, st)
}

func decodeObject(raw []byte) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("bad status document: %w", err)
	}
	return m, nil
}

// printStatus prints the /status document readably; keys it does not know
// are printed as compact JSON.
func printStatus(w io.Writer, st map[string]any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	known := []string{"node", "cluster_id", "leader", "members", "raft", "files", "config"}
	for _, k := range []string{"node", "cluster_id", "leader"} {
		if v, ok := st[k]; ok {
			fmt.Fprintf(tw, "%s:\t%s\n", k, describe(v, "id"))
		}
	}
	for _, k := range []string{"raft", "files", "config"} {
		if v, ok := st[k]; ok {
			fmt.Fprintf(tw, "%s:\t%s\n", k, describe(v))
		}
	}
	for _, k := range sortedKeys(st) {
		if !slices.Contains(known, k) {
			fmt.Fprintf(tw, "%s:\t%s\n", k, describe(st[k]))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if m, ok := st["members"].([]any); ok {
		fmt.Fprintln(w, "members:")
		return printMembers(w, m)
	}
	return nil
}

var (
	idKeys    = []string{"id", "node_id", "name"}
	stateKeys = []string{"state", "status"}
	roleKeys  = []string{"raft", "role", "suffrage"}
	aliveKeys = []string{"gossip"}
	addrKeys  = []string{"addr", "http", "address", "http_addr"}
)

// printMembers prints one line per member: ID STATE ROLE ADDR and the rest.
func printMembers(w io.Writer, members []any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tSTATE\tGOSSIP\tRAFT\tHTTP\tOTHER")
	for _, m := range members {
		mm, ok := m.(map[string]any)
		if !ok {
			fmt.Fprintf(tw, "  %s\n", describe(m))
			continue
		}
		used := map[string]bool{}
		pick := func(keys []string) string {
			for _, k := range keys {
				if v, ok := mm[k]; ok {
					used[k] = true
					return describe(v)
				}
			}
			return "-"
		}
		id, state, alive, role, addr := pick(idKeys), pick(stateKeys), pick(aliveKeys), pick(roleKeys), pick(addrKeys)
		if mm["leader"] == true {
			role += " (leader)"
			used["leader"] = true
		}
		var rest []string
		for _, k := range sortedKeys(mm) {
			if !used[k] {
				rest = append(rest, k+"="+describe(mm[k]))
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", id, state, alive, role, addr, strings.Join(rest, " "))
	}
	return tw.Flush()
}

// describe renders a JSON value on one line; objects as k=v pairs with the
// first keys first, then sorted.
func describe(v any, first ...string) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	case map[string]any:
		var parts []string
		for _, k := range first {
			if x, ok := v[k]; ok {
				parts = append(parts, describe(x))
			}
		}
		for _, k := range sortedKeys(v) {
			if !slices.Contains(first, k) {
				parts = append(parts, k+"="+describe(v[k]))
			}
		}
		return strings.Join(parts, " ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
