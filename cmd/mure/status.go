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
	known := []string{"node", "cluster_id", "leader", "members", "raft", "files", "config", "dispatch"}
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
		if err := printMembers(w, m); err != nil {
			return err
		}
	}
	if d, ok := st["dispatch"].(map[string]any); ok {
		return printDispatch(w, d)
	}
	return nil
}

// printDispatch prints the dispatcher role's holder and, when the node has
// a front door, its state and the figures its policy sees.
func printDispatch(w io.Writer, d map[string]any) error {
	fmt.Fprintf(w, "dispatcher: %s (%s)\n", describe(d["holder"]), describe(d["how"]))
	f, ok := d["front"].(map[string]any)
	if !ok {
		return nil
	}
	state := "closed here (another node holds the role)"
	if f["active"] == true {
		state = "open here since " + describe(f["since"])
	}
	fmt.Fprintf(w, "front door: %s  mode=%s policy=%s  %s\n", describe(f["addr"]), describe(f["mode"]), describe(f["policy"]), state)
	if e, ok := f["bind_error"]; ok {
		fmt.Fprintf(w, "  cannot open yet: %s\n", describe(e))
	}
	fmt.Fprintf(w, "  open=%s accepted=%s proxied=%s broken=%s takeovers=%s\n", describe(f["open_connections"]), describe(f["accepted"]),
		describe(f["proxied"]), describe(f["broken"]), describe(f["takeovers"]))
	fmt.Fprintf(w, "  decisions: %s\n", describe(f["decisions"]))
	if r, ok := f["rejected"]; ok {
		fmt.Fprintf(w, "  rejected: %s\n", describe(r))
	}
	if sa, ok := d["single_address"].(map[string]any); ok {
		path := describe(sa["path"])
		if sa["path"] == nil {
			path = "not placing here"
		}
		fmt.Fprintf(w, "  single address: %s  takes tag %s  SYNs placed=%s (by the table %s) taken here=%s expired=%s  table rebuilds=%s (%s half-open, %s nodes silent)\n",
			path, describe(sa["accept_tag"]), describe(sa["tapped"]), describe(sa["retransmitted"]), describe(sa["injected"]),
			describe(sa["expired"]), describe(sa["rebuilds"]), describe(sa["rebuilt"]), describe(sa["unreported"]))
	}
	nodes, _ := f["nodes"].([]any)
	if len(nodes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tALIVE\tCONNS\tASSIGNED\tCPU\tRUNQ\tFREE MEM\tADDR")
	for _, n := range nodes {
		m, ok := n.(map[string]any)
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", describe(m["id"]), describe(m["alive"]), describe(m["connections"]),
			describe(m["assigned"]), percent(m["cpu"]), describe(m["load"]), describe(m["free_memory_bytes"]), describe(m["addr"]))
	}
	return tw.Flush()
}

// percent renders a 0..1 fraction as a percentage.
func percent(v any) string {
	n, ok := v.(json.Number)
	if !ok {
		return describe(v)
	}
	f, err := n.Float64()
	if err != nil {
		return n.String()
	}
	return fmt.Sprintf("%.0f%%", 100*f)
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
