package transport

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestRaftLayerDialAccept(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)
	var layer raft.StreamLayer = a.RaftLayer()
	if layer.Addr().String() != a.Addr() {
		t.Fatalf("layer Addr = %v", layer.Addr())
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := layer.Accept()
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			err = echoOnce(c, 4)
			c.Close()
		}
		accepted <- err
	}()
	c, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr()), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("accept side: %v", err)
	}
}

// logFSM records applied commands.
type logFSM struct {
	mu   sync.Mutex
	cmds []string
}

func (f *logFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return nil
}

func (f *logFSM) has(cmd string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cmds {
		if c == cmd {
			return true
		}
	}
	return false
}

func (f *logFSM) Snapshot() (raft.FSMSnapshot, error) { return noSnap{}, nil }
func (f *logFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type noSnap struct{}

func (noSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noSnap) Release()                          {}

func TestRealRaftOverMux(t *testing.T) {
	k := mustKey(t)
	muxes := []*Mux{newTestMux(t, k), newTestMux(t, k)}
	servers := []raft.Server{
		{ID: "a", Address: raft.ServerAddress(muxes[0].Addr())},
		{ID: "b", Address: raft.ServerAddress(muxes[1].Addr())},
	}
	var rafts []*raft.Raft
	var fsms []*logFSM
	for i, m := range muxes {
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.HeartbeatTimeout = 300 * time.Millisecond
		conf.ElectionTimeout = 300 * time.Millisecond
		conf.LeaderLeaseTimeout = 150 * time.Millisecond
		conf.CommitTimeout = 10 * time.Millisecond
		conf.LogOutput = io.Discard
		trans := raft.NewNetworkTransport(m.RaftLayer(), 3, 2*time.Second, io.Discard)
		logs, stable, snaps := raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if i == 0 {
			if err := raft.BootstrapCluster(conf, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
				t.Fatalf("bootstrap: %v", err)
			}
		}
		fsm := &logFSM{}
		r, err := raft.NewRaft(conf, fsm, logs, stable, snaps, trans)
		if err != nil {
			t.Fatalf("NewRaft: %v", err)
		}
		t.Cleanup(func() {
			if err := r.Shutdown().Error(); err != nil {
				t.Errorf("raft shutdown: %v", err)
			}
			_ = trans.Close()
		})
		rafts = append(rafts, r)
		fsms = append(fsms, fsm)
	}

	var leader *raft.Raft
	eventually(t, 15*time.Second, "a raft leader", func() bool {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				leader = r
				return true
			}
		}
		return false
	})
	for i := range 3 {
		cmd := fmt.Sprintf("cmd-%d", i)
		if err := leader.Apply([]byte(cmd), 5*time.Second).Error(); err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
	eventually(t, 10*time.Second, "both FSMs applied", func() bool {
		return fsms[0].has("cmd-2") && fsms[1].has("cmd-2")
	})
}
