package meta

import (
	"strings"
	"testing"
	"time"
)

func TestValidateSetting(t *testing.T) {
	tests := []struct {
		key, value string
		ok         bool
	}{
		{CfgReplication, "all", true},
		{CfgReplication, "1", true},
		{CfgReplication, "3", true},
		{CfgReplication, "64", true},
		{CfgReplication, "0", false},
		{CfgReplication, "65", false},
		{CfgReplication, "-1", false},
		{CfgReplication, "ALL", false},
		{CfgReplication, "", false},
		{CfgReplication, " 3", false},
		{CfgReplication, "3.0", false},
		{CfgReplication, "two", false},
		{CfgDurability, "two", true},
		{CfgDurability, "local", true},
		{CfgDurability, "Two", false},
		{CfgDurability, "", false},
		{CfgDurability, "2", false},
		{CfgResume, "idle", true},
		{CfgResume, "immediate", true},
		{CfgResume, "reads", true},
		{CfgResume, "never", false},
		{CfgResume, "", false},
		{CfgResumeIdle, "1s", true},
		{CfgResumeIdle, "500ms", true},
		{CfgResumeIdle, "0s", true},
		{CfgResumeIdle, "24h", true},
		{CfgResumeIdle, "24h0m1s", false},
		{CfgResumeIdle, "-1s", false},
		{CfgResumeIdle, "1", false},
		{CfgResumeIdle, "soon", false},
		{CfgResumeIdle, "", false},
		{CfgResumeReads, "1", true},
		{CfgResumeReads, "3", true},
		{CfgResumeReads, "1000", true},
		{CfgResumeReads, "0", false},
		{CfgResumeReads, "1001", false},
		{CfgResumeReads, "x", false},
		{CfgReplicationRate, "64MiB", true},
		{CfgReplicationRate, "32MiB", true},
		{CfgReplicationRate, "50MiB/s", true},
		{CfgReplicationRate, "100M", true},
		{CfgReplicationRate, "1.5G", true},
		{CfgReplicationRate, "64KiB", true},
		{CfgReplicationRate, "0", true},
		{CfgReplicationRate, "63KiB", false},
		{CfgReplicationRate, "100", false},
		{CfgReplicationRate, "-1M", false},
		{CfgReplicationRate, "fast", false},
		{CfgReplicationRate, "10Mbit", false},
		{CfgReplicationRate, "", false},
		{"unknown", "1", false},
		{"", "", false},
		{"Replication", "all", false},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			err := ValidateSetting(tc.key, tc.value)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateSetting(%q, %q) = %v, want ok=%v", tc.key, tc.value, err, tc.ok)
			}
		})
	}
}

func TestDefaultsAreValid(t *testing.T) {
	d := DefaultConfig()
	if len(d) != 10 { // the catalogue's own; dispatch.policy is registered by dispatch
		t.Fatalf("DefaultConfig has %d keys: %v", len(d), d)
	}
	for k, v := range d {
		t.Run(k, func(t *testing.T) {
			if err := ValidateSetting(k, v); err != nil {
				t.Fatalf("default %s=%s invalid: %v", k, v, err)
			}
		})
	}
	d[CfgReplication] = "7"
	if DefaultConfig()[CfgReplication] != "all" {
		t.Fatal("DefaultConfig returned the shared map")
	}
}

func TestParseConfig(t *testing.T) {
	const rate = 64 << 20 // replication.rate's default
	def := Config{Replicas: 0, LocalOnly: false, Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: rate}
	tests := []struct {
		name string
		in   map[string]string
		want Config
	}{
		{"nil map gives defaults", nil, def},
		{"empty map gives defaults", map[string]string{}, def},
		{"defaults map", DefaultConfig(), def},
		{"replicas", map[string]string{CfgReplication: "3"}, Config{Replicas: 3, Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: rate}},
		{"replication all", map[string]string{CfgReplication: "all"}, def},
		{"local", map[string]string{CfgDurability: "local"}, Config{LocalOnly: true, Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: rate}},
		{"two", map[string]string{CfgDurability: "two"}, def},
		{"everything", map[string]string{CfgReplication: "2", CfgDurability: "local", CfgResume: "reads", CfgResumeIdle: "250ms", CfgResumeReads: "10", CfgReplicationRate: "50MiB/s"},
			Config{Replicas: 2, LocalOnly: true, Resume: "reads", ResumeIdle: 250 * time.Millisecond, ResumeReads: 10, ReplicationRate: 50 << 20}},
		{"rate off", map[string]string{CfgReplicationRate: "0"}, Config{Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3}},
		{"unknown keys ignored", map[string]string{"x": "y"}, def},
		{"hot", map[string]string{CfgHotReads: "5", CfgHotWindow: "500ms", CfgHotCool: "2s", CfgHotMax: "3"},
			Config{Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: rate, HotReads: 5, HotWindow: 500 * time.Millisecond, HotCool: 2 * time.Second, HotMax: 3}},
		{"hot off", map[string]string{CfgHotReads: "0"}, Config{Resume: "idle", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: rate, HotWindow: 10 * time.Second, HotCool: time.Minute, HotMax: 64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want.HotWindow == 0 {
				tc.want = withHotDefaults(tc.want)
			}
			if got := ParseConfig(tc.in); got != tc.want {
				t.Fatalf("ParseConfig(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// withHotDefaults is c with the hot.* settings' defaults.
func withHotDefaults(c Config) Config {
	c.HotReads, c.HotWindow, c.HotCool, c.HotMax = 100, 10*time.Second, time.Minute, 64
	return c
}

func TestParseConfigFromState(t *testing.T) {
	h := newHarness(t)
	h.must(Command{Kind: KindSetConfig, Key: CfgResume, Value: "immediate"})
	h.must(Command{Kind: KindSetConfig, Key: CfgReplication, Value: "2"})
	h.apply(Command{Kind: KindSetConfig, Key: CfgReplication, Value: "0"}) // refused
	c := ParseConfig(h.s.Config())
	want := withHotDefaults(Config{Replicas: 2, Resume: "immediate", ResumeIdle: time.Second, ResumeReads: 3, ReplicationRate: 64 << 20})
	if c != want {
		t.Fatalf("config = %+v, want %+v", c, want)
	}
}

// A refused replication.rate says which key, what was given and what
// would do.
func TestReplicationRateError(t *testing.T) {
	for _, v := range []string{"fast", "-1M", "100", "10Mbit"} {
		err := ValidateSetting(CfgReplicationRate, v)
		if err == nil {
			t.Fatalf("%q accepted", v)
		}
		for _, part := range []string{"replication.rate", `"` + v + `"`, "64MiB", "0 for no cap", "at least 64KiB"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error for %q = %q, lacks %q", v, err, part)
			}
		}
	}
}

// TypedConfig is kept between calls and follows every change of the
// settings: a SetConfig, and a snapshot restored.
func TestTypedConfigFollowsChanges(t *testing.T) {
	s := NewState()
	if c := s.TypedConfig(); c != ParseConfig(s.Config()) {
		t.Fatalf("defaults: %+v", c)
	}
	if r := s.Apply(1, Command{Kind: KindSetConfig, Key: CfgDurability, Value: "local"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if !s.TypedConfig().LocalOnly {
		t.Fatal("durability=local not seen after SetConfig")
	}
	m := NewFSM()
	m.state = s
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	m2 := NewFSM()
	m2.Read(func(st *State) { st.TypedConfig() }) // cached before the restore
	if err := m2.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	m2.Read(func(st *State) {
		if !st.TypedConfig().LocalOnly {
			t.Error("durability=local not seen after a restore")
		}
	})
}
