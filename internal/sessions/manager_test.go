package sessions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/sessions/holder"
)

// raftless is an in-memory Cluster seam around a real state machine: an
// op applies at once, after onApply (if set) has seen it.
type raftless struct {
	seat
	fsm     *meta.FSM
	mu      sync.Mutex
	idx     uint64
	onApply func(meta.Op)
}

func newRaftless(id string) *raftless {
	return &raftless{seat: seat{id: id}, fsm: meta.NewFSM(NewPart())}
}

func (r *raftless) FSM() *meta.FSM { return r.fsm }

func (r *raftless) ApplyOp(_ context.Context, o meta.Op) (*meta.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.onApply != nil {
		r.onApply(o)
	}
	b, err := o.Encode()
	if err != nil {
		return nil, err
	}
	r.idx++
	return r.fsm.Apply(&raft.Log{Index: r.idx, Term: 1, Type: raft.LogCommand, Data: b}).(*meta.Result), nil
}

func (r *raftless) must(t *testing.T, o meta.Op) {
	t.Helper()
	if res, err := r.ApplyOp(context.Background(), o); err != nil || res.Err != nil {
		t.Fatalf("%s: %v %v", o.Kind, err, res.Err)
	}
}

// A session's record, with its credential's hash, is written before its
// holder starts, so that its program may use the credential at its first
// instant; a start that fails leaves no record and no directory.
func TestStartRecordsBeforeSpawn(t *testing.T) {
	if CanSwitch() != nil {
		t.Skip("starting a session needs root, or CAP_SETUID and CAP_SETGID")
	}
	// The user "body" of prefix "no" runs as the account nobody.
	if _, err := lookupAccount("no", "body"); err != nil {
		t.Skipf("no usable account nobody: %v", err)
	}
	seen := filepath.Join(t.TempDir(), "seen")
	// The holder writes the credential it was given, then fails at once.
	script := `echo "$` + holder.SecretEnv + `" > ` + seen + `; exit 3`
	cl := newRaftless("n1")
	var added []Session
	cl.onApply = func(o meta.Op) {
		if o.Kind != OpAdd {
			return
		}
		var s Session
		if err := json.Unmarshal(o.Body, &s); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(seen); err == nil {
			t.Errorf("session %s was recorded after its holder started", s.ID)
		}
		added = append(added, s)
	}
	dir := t.TempDir()
	m, err := NewManager(Config{Dir: dir, AccountPrefix: "no", HolderCommand: []string{"/bin/sh", "-c", script, "holder"}}, cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(context.Background(), "body", "", holder.Size{Cols: 80, Rows: 24}, Origin{}); err == nil {
		t.Fatal("a session whose holder exits at once was started")
	}
	if len(added) != 1 {
		t.Fatalf("%d records added before the holder started, want 1", len(added))
	}
	if s := added[0]; s.State != StateStarting || s.Node != "n1" {
		t.Errorf("recorded as %s on %s, want starting on n1", s.State, s.Node)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the holder did not run: %v", err)
	}
	token, ok := strings.CutPrefix(strings.TrimSpace(string(b)), CredentialEnv+"=")
	if !ok || credentialHash(token) != added[0].CredentialHash {
		t.Errorf("the holder got %q, not the credential whose hash was recorded", b)
	}
	if recs := m.Records(); len(recs) != 0 {
		t.Errorf("a session that did not start is listed: %+v", recs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a session that did not start left %d directories", len(ents))
	}
}

// The loop removes a first start's record left starting with no holder
// (its start failed and could not remove it, or its node stopped while
// starting), leaves alone one being started now, and restarts one moved
// here from a dead node.
func TestTickStartingRecords(t *testing.T) {
	cl := newRaftless("n1")
	m, err := NewManager(Config{Dir: t.TempDir(), AccountPrefix: "no-such-account-", HolderCommand: []string{"/bin/false"}}, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Session{
		{ID: "failed", User: "u", Kind: "shell", Node: "n1", State: StateStarting},
		{ID: "now", User: "u", Kind: "shell", Node: "n1", State: StateStarting},
		{ID: "moved", User: "u", Kind: "shell", Node: "n1", State: StateStarting, Restarts: 1},
	} {
		cl.must(t, AddOp(s))
	}
	m.setStarting("now", true)
	m.tick(context.Background())
	got := map[string]string{}
	for _, r := range m.Records() {
		got[r.ID] = r.State
	}
	// "moved" is tried here; without the account its restart fails: lost.
	want := map[string]string{"now": StateStarting, "moved": StateLost}
	if len(got) != len(want) || got["now"] != want["now"] || got["moved"] != want["moved"] {
		t.Errorf("records after a tick: %v, want %v", got, want)
	}
}

// The leader restarts elsewhere the sessions of a dead node whose kind
// says so, but not a first start the node did not finish: that one is
// lost (no program is started that its request was likely told failed).
func TestWatchNodesFirstStart(t *testing.T) {
	cl := newRaftless("n1")
	m, err := NewManager(Config{Dir: t.TempDir(), LostAfter: time.Millisecond}, cl)
	if err != nil {
		t.Fatal(err)
	}
	k := m.kinds["shell"]
	k.RestartElsewhere = true
	m.kinds["shell"] = k
	for _, s := range []Session{
		{ID: "unstarted", User: "u", Kind: "shell", Node: "n2", State: StateStarting},
		{ID: "running", User: "u", Kind: "shell", Node: "n2", State: StateRunning},
	} {
		cl.must(t, AddOp(s))
	}
	m.deadSince["n2"] = time.Now().Add(-time.Second) // dead for longer than LostAfter
	m.watchNodes(context.Background(), m.Records())
	got := map[string]string{}
	for _, r := range m.Records() {
		got[r.ID] = r.Node + " " + r.State
	}
	want := map[string]string{"unstarted": "n2 " + StateLost, "running": "n1 " + StateStarting}
	if len(got) != len(want) || got["unstarted"] != want["unstarted"] || got["running"] != want["running"] {
		t.Errorf("records after the dead node's sessions were looked at: %v, want %v", got, want)
	}
}
