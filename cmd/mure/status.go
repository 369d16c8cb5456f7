package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mure-dev/mure/internal/apps"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/node"
)

func init() { register("status", "show the cluster state", runStatus) }

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("status", "", "Show the state of the cluster as seen by a node: the node, raft, the catalogue,\n"+
		"the store, the settings, the members and their load, and each service the node runs.", stderr)
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
	var st node.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("bad status document: %w", err)
	}
	return printStatus(stdout, st)
}

// printStatus prints /status for a person: a summary, the members, then
// each service's own lines.
func printStatus(w io.Writer, st node.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "node:\t%s  http=%s peer=%s\n", st.Node.ID, st.Node.HTTP, st.Node.Peer)
	fmt.Fprintf(tw, "cluster_id:\t%s\n", st.ClusterID)
	lease := "no read lease"
	if st.ReadLease {
		lease = "read lease held"
	}
	fmt.Fprintf(tw, "leader:\t%s  (%s)\n", or(st.Leader, "none"), lease)
	fmt.Fprintf(tw, "raft:\t%s\n", pairs(st.Raft, "state", "term", "commit_index", "applied_index", "last_log_index", "last_contact", "num_peers"))
	f := st.Files
	fmt.Fprintf(tw, "files:\tlive=%d suspended=%d pending=%d under_replicated=%d backlog=%d hot_copies=%d (added %d, dropped %d)\n",
		f.Live, f.Suspended, f.Pending, f.UnderReplicated, f.Backlog, f.HotHeld, f.HotAdded, f.HotDropped)
	s := st.Store
	fmt.Fprintf(tw, "store:\t%d blobs, %s; %s free on disk; corrupt=%d unverified=%d scrub_passes=%d\n", s.Blobs, human(s.Bytes),
		human(int64(s.DiskFree)), s.Corrupt, s.Unverified, s.ScrubPasses)
	h := st.Host
	fmt.Fprintf(tw, "host:\t%s: %.1f CPU s used, quota %s; memory %s of %s\n", h.Source, h.CPUSeconds, quota(h.CPUQuota), human(h.MemoryBytes), limit(h.MemoryLimit))
	fmt.Fprintf(tw, "config:\t%s\n", pairs(st.Config))
	fmt.Fprintf(tw, "services:\t%s\n", strings.Join(st.ServiceNames, ", "))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "members:")
	if err := printMembers(w, st.Members); err != nil {
		return err
	}
	if err := printServices(w, st); err != nil {
		return err
	}
	return printDispatch(w, st.Dispatch)
}

// printServices prints a line for each service that has more to say than
// the summary: the apps and the client API.
func printServices(w io.Writer, st node.Status) error {
	var api node.APIStatus
	if ok, err := st.Service("api", &api); err != nil {
		return err
	} else if ok {
		fast := ""
		if api.Fast != "" {
			fast = "  fast lane " + api.Fast
		}
		fmt.Fprintf(w, "client API: %d connections open, %d refused over --max-conns%s\n", api.Connections, api.Refused, fast)
	}
	var a apps.Status
	if ok, err := st.Service("apps", &a); err != nil {
		return err
	} else if ok && (a.CGIDir != "" || len(a.Proxies) > 0) {
		fmt.Fprintf(w, "apps: cgi %s (%d of %d running)  proxies %s\n", or(a.CGIDir, "off"), a.CGIRunning, a.CGIMaxRunning, or(strings.Join(a.Proxies, " "), "none"))
	}
	return nil
}

// printDispatch prints the dispatcher role's holder and, when the node has
// a front door, its state and the figures its policy sees.
func printDispatch(w io.Writer, d node.DispatchInfo) error {
	fmt.Fprintf(w, "dispatcher: %s (%s)\n", or(d.Holder, "none"), or(d.How, "-"))
	f := d.Front
	if f == nil {
		return nil
	}
	state := "closed here (another node holds the role)"
	if f.Active {
		state = "open here since " + f.Since.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "front door: %s  mode=%s policy=%s  %s\n", f.Addr, f.Mode, f.Policy, state)
	if f.BindError != "" {
		fmt.Fprintf(w, "  cannot open yet: %s\n", f.BindError)
	}
	fmt.Fprintf(w, "  open=%d accepted=%d proxied=%d local=%d broken=%d takeovers=%d\n", f.Open, f.Accepted, f.Proxied, f.Local, f.Broken, f.Takeovers)
	fmt.Fprintf(w, "  decisions: %s\n", or(pairs(f.Decisions), "none yet"))
	if len(f.Rejected) > 0 {
		fmt.Fprintf(w, "  rejected: %s\n", pairs(f.Rejected))
	}
	if sa := d.Single; sa != nil {
		path := or(sa.Path, "not placing here")
		fmt.Fprintf(w, "  single address: %s  takes tag %s  SYNs placed=%d (by the table %d) taken here=%d expired=%d  table rebuilds=%d (%d half-open, %d nodes silent)\n",
			path, or(sa.AcceptTag, "-"), sa.Tapped, sa.Retransmitted, sa.Injected, sa.Expired, sa.Rebuilds, sa.Rebuilt, sa.Unreported)
	}
	return printFrontNodes(w, f)
}

func printFrontNodes(w io.Writer, f *frontdoor.Status) error {
	if len(f.Nodes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tALIVE\tCONNS\tASSIGNED\tCPU\tRUNQ\tFREE MEM\tADDR")
	for _, n := range f.Nodes {
		fmt.Fprintf(tw, "  %s\t%v\t%d\t%d\t%.0f%%\t%.2f\t%s\t%s\n", n.ID, n.Alive, n.Connections, n.Assigned, 100*n.CPU, n.Load, human(n.FreeMemory), n.Addr)
	}
	return tw.Flush()
}

// printMembers prints one line per member: its catalogue state, gossip
// view, raft role, address, zone, round trip from the node asked, load
// figures and supported namespaces.
func printMembers(w io.Writer, members []cluster.Member) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tSTATE\tGOSSIP\tRAFT\tHTTP\tZONE\tRTT\tCONNS\tCPU\tFREE MEM\tNAMESPACES")
	for _, m := range members {
		role := or(m.Suffrage, "-")
		if m.Leader {
			role += " (leader)"
		}
		conns, cpu, free, rtt := "-", "-", "-", "-"
		if m.RTTMillis > 0 {
			rtt = fmt.Sprintf("%.2f ms", m.RTTMillis)
		}
		if l := m.Load; l != nil {
			conns, cpu, free = fmt.Sprint(l.Connections), fmt.Sprintf("%.0f%%", 100*l.CPU), human(l.FreeMemory)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, or(string(m.State), "-"), or(string(m.Gossip), "-"), role, or(m.HTTPAddr, "-"), or(m.Zone, "-"),
			rtt, conns, cpu, free, or(m.Supports, "-"))
	}
	return tw.Flush()
}

// pairs renders a map as k=v pairs: the first keys in order, then the rest
// sorted.
func pairs[V any](m map[string]V, first ...string) string {
	var parts []string
	pair := func(k string, v V) string {
		if s := fmt.Sprint(v); s != "" {
			return k + "=" + s
		}
		return k + `=""`
	}
	for _, k := range first {
		if v, ok := m[k]; ok {
			parts = append(parts, pair(k, v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(first, k) {
			parts = append(parts, pair(k, m[k]))
		}
	}
	return strings.Join(parts, " ")
}

// human renders a byte count with a binary unit and one decimal.
func human(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f%ciB", f, units[i])
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

func quota(cores float64) string {
	if cores <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f cores", cores)
}

func limit(b int64) string {
	if b <= 0 {
		return "no limit"
	}
	return human(b)
}
