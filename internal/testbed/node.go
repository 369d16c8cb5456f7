package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyTimeout bounds the wait for a node to answer and for the cluster to
// gather.
const readyTimeout = 60 * time.Second

// startNodes starts the first server's node, then the others joining it,
// and waits until every node sees them all.
func (tb *Testbed) startNodes(ctx context.Context) error {
	servers := tb.Servers()
	for i, h := range servers {
		h.Data = filepath.Join(tb.Mount, h.Name)
		if h.Disk != nil {
			h.Data = filepath.Join(h.Disk.Mount, "node") // beside ext4's lost+found
		}
		if err := os.MkdirAll(h.Data, 0o755); err != nil {
			return err
		}
		var join []string
		if i > 0 {
			join = []string{"--join", servers[0].Peer(), "--key-file", filepath.Join(servers[0].Data, "cluster.key")}
		}
		if err := tb.startNode(ctx, h, join...); err != nil {
			return err
		}
		if err := waitReady(ctx, h); err != nil {
			return err
		}
	}
	return waitMembers(ctx, servers, tb.AdminToken())
}

// AdminToken returns the admin credential the first server's node wrote
// into its data directory when it founded the cluster with Config.Auth
// ("" without one).
func (tb *Testbed) AdminToken() string {
	s := tb.Servers()
	if len(s) == 0 || s[0].Data == "" {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(s[0].Data, "admin.token"))
	return strings.TrimSpace(string(b))
}

// startNode starts host h's node in the background (it outlives this
// process: `mure testbed up` returns while the nodes run).
func (tb *Testbed) startNode(ctx context.Context, h *Host, extra ...string) error {
	logs := filepath.Join(tb.Config.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	h.Log = filepath.Join(logs, h.Name+".log")
	logf, err := os.OpenFile(h.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	// --auth=false unless Config.Auth: the testbed is an emulated lab on
	// one machine whose tools (curl, mure bench) send no credentials.
	args := []string{"serve", "--data", h.Data, "--http", h.HTTP(), "--peer", h.Peer(), "--auth=" + strconv.FormatBool(tb.Config.Auth)}
	args = append(args, extra...)
	args = append(args, tb.Config.NodeArgs...)
	cmd := tb.Command(context.WithoutCancel(ctx), h, tb.Config.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node on %s: %w", h.Name, err)
	}
	h.PID = cmd.Process.Pid
	go cmd.Wait() // reap it if it dies while this process lives
	return tb.save()
}

// Start restarts the node of server host h (after Kill), on its data.
func (tb *Testbed) Start(ctx context.Context, h *Host) error {
	if !h.Server {
		return fmt.Errorf("%s is a client host: it runs no node", h.Name)
	}
	if h.PID > 0 && alive(h.PID) {
		return fmt.Errorf("the node of %s is running (pid %d)", h.Name, h.PID)
	}
	if err := tb.startNode(ctx, h); err != nil {
		return err
	}
	return waitReady(ctx, h)
}

// waitReady polls the node's /readyz until it answers 200.
func waitReady(ctx context.Context, h *Host) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		if !alive(h.PID) {
			return fmt.Errorf("the node of %s exited; its log (%s) ends with:\n%s", h.Name, h.Log, tail(h.Log, 15))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/readyz", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("node of %s not ready: %w (last: %v)", h.Name, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitMembers polls every node's /status until each sees all servers
// alive; token is the admin credential ("" when the nodes ask none).
func waitMembers(ctx context.Context, servers []*Host, token string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	for _, h := range servers {
		for {
			n, err := aliveMembers(ctx, c, h, token)
			if err == nil && n == len(servers) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node of %s sees %d of %d members: %w (last error: %v)", h.Name, n, len(servers), ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func aliveMembers(ctx context.Context, c *http.Client, h *Host, token string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/status", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Members []struct {
			State  string `json:"state"`
			Gossip string `json:"gossip"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, err
	}
	n := 0
	for _, m := range st.Members {
		if m.State == "active" && m.Gossip == "alive" {
			n++
		}
	}
	return n, nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func tail(file string, n int) string {
	data, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func nsExists(ctx context.Context, ns string) bool {
	names, err := netnsNames(ctx)
	return err != nil || slices.Contains(names, ns)
}

func linkExists(ctx context.Context, link string) bool {
	names, err := linkNames(ctx)
	return err != nil || slices.Contains(names, link)
}

// Running reports whether process pid runs.
func Running(pid int) bool { return pid > 0 && alive(pid) }
