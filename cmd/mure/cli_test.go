package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI implements the minimal files, list, config and status API.
type fakeAPI struct {
	mu    sync.Mutex
	files map[string][]byte
	cfg   map[string]string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(r.URL.Path, "/files/"):
		f.file(w, r, strings.TrimPrefix(r.URL.Path, "/files/"))
	case r.URL.Path == "/list":
		f.list(w, r)
	case r.URL.Path == "/config":
		json.NewEncoder(w).Encode(f.cfg)
	case strings.HasPrefix(r.URL.Path, "/config/"):
		b, _ := io.ReadAll(r.Body)
		f.cfg[strings.TrimPrefix(r.URL.Path, "/config/")] = string(b)
		json.NewEncoder(w).Encode(f.cfg)
	case r.URL.Path == "/status":
		io.WriteString(w, `{"node":{"id":"n1","addr":"x"},"cluster_id":"c1","leader":"n1",`+
			`"members":[{"id":"n1","state":"active","gossip":"alive","raft":"voter","http":"h1:1","leader":true,"zone":"rack-a"},{"id":"n2","state":"active","gossip":"dead","raft":"voter"}],`+
			`"files":{"live":2},"config":{"replicas":"3"},"service_names":["files","api"],"services":{"api":{"connections":4,"refused":1}},`+
			`"dispatch":{"holder":"n1","how":"raft-leader","front":{"active":true,"addr":"10.0.0.1:80","mode":"redirect","policy":"round-robin","since":"2026-01-02T03:04:05Z",`+
			`"decisions":{"round-robin":7},"nodes":[{"id":"n1","addr":"h1:1","alive":true,"connections":3,"assigned":2,"cpu":0.5,"load":0.1,"free_memory_bytes":1024}],`+
			`"open_connections":1,"accepted":7,"takeovers":1}}}`)
	case strings.HasPrefix(r.URL.Path, "/status/files/"):
		io.WriteString(w, `{"state":"ok","replicas":["n1"],"read_order":[{"node":"n2","zone":"z","reason":"same zone z, cpu 5% conns 1"},{"node":"n1","reason":"not seen alive"}]}`)
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":"no route","code":"not_found"}`)
	}
}

func (f *fakeAPI) file(w http.ResponseWriter, r *http.Request, p string) {
	data, ok := f.files[p]
	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("If-None-Match") == "*" && ok {
			w.WriteHeader(412)
			io.WriteString(w, `{"error":"exists","code":"precondition_failed"}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		f.files[p] = b
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"path":%q,"version":%d,"etag":"e%d","size":%d}`, p, len(f.files), len(b), len(b))
		return
	case http.MethodDelete:
		if ok {
			delete(f.files, p)
			w.WriteHeader(204)
			return
		}
	default:
		if ok {
			sum := sha256.Sum256(data)
			w.Header().Set("X-Mure-Sha256", hex.EncodeToString(sum[:]))
			w.Header().Set("ETag", fmt.Sprintf(`"e%d"`, len(data)))
			w.Header().Set("X-Mure-Version", "1")
			w.Header().Set("Content-Type", "application/octet-stream")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
			return
		}
	}
	w.WriteHeader(404)
	io.WriteString(w, `{"error":"no such file","code":"not_found"}`)
}

func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, delim, after := q.Get("prefix"), q.Get("delimiter"), q.Get("after")
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 2 // small pages to exercise paging
	}
	type entry struct {
		path string
		dir  bool
	}
	seen := map[string]bool{}
	var all []entry
	for p := range f.files {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		if delim != "" {
			if i := strings.Index(p[len(prefix):], delim); i >= 0 {
				d := p[:len(prefix)+i+len(delim)]
				if !seen[d] {
					seen[d] = true
					all = append(all, entry{d, true})
				}
				continue
			}
		}
		all = append(all, entry{p, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].path < all[j].path })
	page := map[string]any{"files": []any{}, "prefixes": []string{}, "next": ""}
	n := 0
	for _, e := range all {
		if e.path <= after {
			continue
		}
		if n == limit {
			page["next"] = after
			break
		}
		n++
		after = e.path
		if e.dir {
			page["prefixes"] = append(page["prefixes"].([]string), e.path)
		} else {
			page["files"] = append(page["files"].([]any), map[string]any{
				"path": e.path, "size": len(f.files[e.path]), "version": 1, "etag": "e", "modified": "2024-01-02T03:04:05Z"})
		}
	}
	json.NewEncoder(w).Encode(page)
}

func newFake(t *testing.T) (*fakeAPI, string) {
	f := &fakeAPI{files: map[string][]byte{}, cfg: map[string]string{"replicas": "3"}}
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	return f, s.URL
}

func run(t *testing.T, fn func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := fn(context.Background(), args, &out, &errOut)
	return out.String(), err
}

func TestPutGetLs(t *testing.T) {
	f, node := newFake(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := bytes.Repeat([]byte("0123456789"), 10000)
	os.WriteFile(src, data, 0o644)

	out, err := run(t, runPut, "--node", node, "a/b/big", src)
	if err != nil || out != "a/b/big version 1 etag e100000 size 100000\n" {
		t.Fatalf("put: %q %v", out, err)
	}
	if !bytes.Equal(f.files["a/b/big"], data) {
		t.Fatal("stored content differs")
	}
	// stdin, flags after the arguments
	r, w, _ := os.Pipe()
	old := os.Stdin
	os.Stdin = r
	go func() { io.WriteString(w, "hi"); w.Close() }()
	_, err = run(t, runPut, "a/c", "-", "--node", node)
	os.Stdin = old
	if err != nil || string(f.files["a/c"]) != "hi" {
		t.Fatalf("put stdin: %v %q", err, f.files["a/c"])
	}
	if _, err := run(t, runPut, "--node", node, "--create", "a/c", src); !strings.Contains(fmt.Sprint(err), "412") {
		t.Fatalf("create over existing: %v", err)
	}
	f.files["z"] = nil

	out, err = run(t, runGet, "--node", node, "a/c")
	if err != nil || out != "hi" {
		t.Fatalf("get: %q %v", out, err)
	}
	out, err = run(t, runGet, "--node", node, "--range", "3-5", "a/b/big")
	if err != nil || out != "345" {
		t.Fatalf("get range: %q %v", out, err)
	}
	dst := filepath.Join(dir, "dst")
	if _, err := run(t, runGet, "--node", node, "-o", dst, "a/b/big"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatal("get -o content differs")
	}
	if _, err := run(t, runGet, "--node", node, "-o", dst+"2", "missing"); err == nil {
		t.Fatal("get missing succeeded")
	}
	if _, err := os.Stat(dst + "2.tmp"); err == nil {
		t.Fatal("temp file left")
	}

	out, err = run(t, runLs, "--node", node)
	want := "         DIR                        a/\n" +
		"           0  2024-01-02T03:04:05Z  z\n"
	if err != nil || out != want {
		t.Fatalf("ls:\n%s%v", out, err)
	}
	out, err = run(t, runLs, "--node", node, "-r", "--json")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, `"path":"a/b/big"`) {
		t.Fatalf("ls -r:\n%s%v", out, err)
	}
	out, err = run(t, runLs, "--node", node, "-r", "--limit", "2")
	if err != nil || strings.Count(out, "\n") != 2 {
		t.Fatalf("ls --limit:\n%s%v", out, err)
	}

	if _, err := run(t, runRm, "--node", node, "z", "nope"); err == nil || !strings.Contains(err.Error(), "1 of 2") {
		t.Fatalf("rm: %v", err)
	}
	if _, ok := f.files["z"]; ok {
		t.Fatal("z not removed")
	}
}

func TestOtherCommands(t *testing.T) {
	f, node := newFake(t)
	f.files["f"] = []byte("abc")
	tests := []struct {
		name string
		fn   func(context.Context, []string, io.Writer, io.Writer) error
		args []string
		want []string
	}{
		{"stat", runStat, []string{"f"}, []string{"size:      3", "etag:      e3", `"state": "ok"`,
			"read order (from the node asked):\n  1  n2  z  same zone z, cpu 5% conns 1\n  2  n1  -  not seen alive\n"}},
		{"status", runStatus, nil, []string{"leader:      n1", "n2  active  dead", "live=2", "replicas=3", "services:    files, api",
			"client API: 4 connections open, 1 refused", "dispatcher: n1 (raft-leader)",
			"front door: 10.0.0.1:80  mode=redirect policy=round-robin  open here since 2026-01-02T03:04:05Z", "decisions: round-robin=7", "n1    true   3      2         50%"}},
		{"status-json", runStatus, []string{"--json"}, []string{`"cluster_id": "c1"`}},
		{"node-list", runNode, []string{"list"}, []string{"n1  active  alive   voter (leader)  h1:1  rack-a"}},
		{"config", runConfig, nil, []string{"replicas=3\n"}},
		{"config-set", runConfig, []string{"set", "replicas", "5"}, []string{"replicas=5\n"}},
		{"config-get", runConfig, []string{"get", "replicas"}, []string{"5\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.fn, append([]string{"--node", node}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"a", "b", "c"}, {"--nope", "a"}, {"--if-match", "x", "--create", "a"}} {
		if _, err := run(t, runPut, args...); !errors.Is(err, errUsage) {
			t.Errorf("put %q: %v", args, err)
		}
	}
	if _, err := run(t, runGet, "--range", "5-1", "a"); !errors.Is(err, errUsage) {
		t.Errorf("get bad range: %v", err)
	}
	if _, err := run(t, runNode, "frob"); !errors.Is(err, errUsage) {
		t.Errorf("node frob: %v", err)
	}
}

// Every subcommand answers --help (and mure help NAME) with its usage and
// exit status 0; a mistake still exits 2.
func TestHelpOnEverySubcommand(t *testing.T) {
	for _, name := range commandNames() {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errOut bytes.Buffer
				if code := realMain(args, &out, &errOut); code != 0 {
					t.Fatalf("exit %d\n%s", code, errOut.String())
				}
				if !strings.Contains(errOut.String(), "usage: mure "+name) {
					t.Fatalf("no usage of %s:\n%s", name, errOut.String())
				}
			})
		}
	}
	var out, errOut bytes.Buffer
	if code := realMain([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "completion") {
		t.Fatalf("mure --help: exit %d\n%s", code, errOut.String())
	}
	if code := realMain([]string{"frob"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
	if code := realMain([]string{"put", "--nope", "a"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}

// No usage shows a secret taken from the environment: usage is printed on
// every flag mistake, to terminals and CI logs.
func TestUsageHidesSecrets(t *testing.T) {
	t.Setenv("MURE_TOKEN", "env-token-not-to-print")
	t.Setenv("MURE_METRICS_TOKEN", "env-scrape-not-to-print")
	for _, name := range commandNames() {
		var out, errOut bytes.Buffer
		realMain([]string{name, "--help"}, &out, &errOut)
		if s := errOut.String() + out.String(); strings.Contains(s, "not-to-print") {
			t.Errorf("mure %s --help shows a secret:\n%s", name, s)
		}
	}
}

// Completion scripts for the three shells, and the completions they ask
// the binary for: commands, verbs, flags, setting names.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := realMain([]string{"completion", shell}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "__complete") {
				t.Fatalf("exit %d, script of %d bytes:\n%s", code, out.Len(), errOut.String())
			}
		})
	}
	tests := []struct {
		args       []string
		want, lack []string
	}{
		{[]string{"st"}, []string{"stat", "status"}, []string{"put"}},
		{[]string{"node", ""}, []string{"leave", "remove", "list"}, nil},
		{[]string{"put", "--no"}, []string{"--node"}, []string{"--token"}},
		{[]string{"serve", "--front-m"}, []string{"--front-mode", "--front-max-conns"}, nil},
		{[]string{"config", "set", ""}, []string{"replication", "durability", "dispatch.policy"}, nil},
		{[]string{"config", "--node", "h:1", "get", "rep"}, []string{"replication", "replication.rate"}, []string{"durability"}},
		{[]string{"bench", ""}, []string{"replicated-io", "combine"}, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := realMain(append([]string{"__complete"}, tc.args...), &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut.String())
			}
			lines := strings.Split(out.String(), "\n")
			has := func(w string) bool {
				for _, l := range lines {
					if l == w || strings.HasPrefix(l, w+"\t") {
						return true
					}
				}
				return false
			}
			for _, w := range tc.want {
				if !has(w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
			for _, w := range tc.lack {
				if has(w) {
					t.Errorf("%q offered in:\n%s", w, out.String())
				}
			}
		})
	}
}
