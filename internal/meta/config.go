package meta

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/bytesize"
)

// Cluster-wide settings, kept in the replicated state and changed with
// `mure config set`. Every key has a default; Set validates values. The
// catalogue's own settings are below; a part of mure that owns another
// registers it with RegisterSetting (the front door's dispatch.policy).
const (
	// CfgReplication: "all" (every node keeps a copy, the paper's full
	// replication) or a number k ≥ 1 of copies per file.
	CfgReplication = "replication"
	// CfgDurability: "two" (a write is acknowledged when it is durable on
	// the writer and on one standby, when the cluster has another node) or
	// "local" (the paper's: the writer's disk only).
	CfgDurability = "durability"
	// CfgResume: when a suspended file is copied back to the other
	// replicas: "idle" (no write for resume.idle), "immediate" (right
	// after each write) or "reads" (the paper's: resume.reads consecutive
	// reads from distinct clients at the holder).
	CfgResume      = "resume"
	CfgResumeIdle  = "resume.idle"
	CfgResumeReads = "resume.reads"
	// CfgReplicationRate: cap on the bytes per second each node fetches
	// to copy replicas (re-replication, repair, resumption), such as
	// "64MiB" or "100M" (powers of 1024); "0" is no cap. The default,
	// 64MiB (~0.54 Gbit/s), is ~5% of a 10 Gbit/s link; on 1 Gbit/s, 32MiB
	// or less leaves clients most of the link (docs/operations.md).
	CfgReplicationRate = "replication.rate"
	// CfgHotReads: reads per second of one file through a node without a
	// copy of it (forwarded or redirected), over hot.window, above which
	// that node fetches a copy of its own, when replication is below
	// "all" (decision 0039); "0" turns hot replicas off. Lower gains
	// copies sooner and spends more disk and replication bandwidth.
	CfgHotReads = "hot.reads"
	// CfgHotWindow: the span over which a node counts a file's reads;
	// shorter reacts sooner to a burst and more often to noise.
	CfgHotWindow = "hot.window"
	// CfgHotCool: how long a hot copy must be read less than half of
	// hot.reads per second before its node drops it (never below the
	// replication count). Longer keeps copies through lulls.
	CfgHotCool = "hot.cool"
	// CfgHotMax: the most hot copies one node holds at once (its budget);
	// the hottest files first.
	CfgHotMax = "hot.max"
)

// Setting is one cluster-wide setting: its key, default and validation.
// Settings are registered at init by the package that owns them, so every
// binary knows every setting (a node that did not would refuse a value the
// others accept, and the replicas would diverge).
type Setting struct {
	Key     string
	Default string
	// Validate returns an error a person can act on, naming the key.
	Validate func(value string) error
	// Namespace and Version name the namespace version that introduced the
	// setting: the leader refuses to set it while a voter does not
	// support that version (docs/decisions/0012-versioned-namespaces.md).
	// Empty: the core namespace at version 1, known to every binary.
	Namespace string
	Version   int
}

// settings is the registry; written only at init, read under the lock.
var settings = struct {
	sync.RWMutex
	m map[string]Setting
}{m: map[string]Setting{}}

// RegisterSetting adds a setting. It panics on a duplicate key or a
// default its own validation refuses: both are programming errors.
func RegisterSetting(s Setting) {
	settings.Lock()
	defer settings.Unlock()
	if _, dup := settings.m[s.Key]; dup || s.Key == "" || s.Validate == nil {
		panic(fmt.Sprintf("meta: setting %q registered twice, unnamed or without validation", s.Key))
	}
	if err := s.Validate(s.Default); err != nil {
		panic(fmt.Sprintf("meta: setting %q: default: %v", s.Key, err))
	}
	if s.Namespace == "" {
		s.Namespace, s.Version = NSCore, 1
	}
	settings.m[s.Key] = s
}

// LookupSetting returns a registered setting.
func LookupSetting(key string) (Setting, bool) {
	settings.RLock()
	defer settings.RUnlock()
	s, ok := settings.m[key]
	return s, ok
}

func init() {
	for _, s := range []Setting{
		{Key: CfgReplication, Default: "all", Validate: validateReplication},
		{Key: CfgDurability, Default: "two", Validate: oneOf(CfgDurability, "two", "local")},
		{Key: CfgResume, Default: "idle", Validate: oneOf(CfgResume, "idle", "immediate", "reads")},
		{Key: CfgResumeIdle, Default: "1s", Validate: validateResumeIdle},
		{Key: CfgResumeReads, Default: "3", Validate: intIn(CfgResumeReads, "reads", 1, 1000)},
		{Key: CfgReplicationRate, Default: "64MiB", Validate: validateReplicationRate},
		{Key: CfgHotReads, Default: "100", Validate: intIn(CfgHotReads, "reads per second", 0, 1_000_000), Namespace: NSCore, Version: 4},
		{Key: CfgHotWindow, Default: "10s", Validate: durationIn(CfgHotWindow, 100*time.Millisecond, time.Hour), Namespace: NSCore, Version: 4},
		{Key: CfgHotCool, Default: "1m", Validate: durationIn(CfgHotCool, 100*time.Millisecond, 24*time.Hour), Namespace: NSCore, Version: 4},
		{Key: CfgHotMax, Default: "64", Validate: intIn(CfgHotMax, "files", 1, 100_000), Namespace: NSCore, Version: 4},
	} {
		RegisterSetting(s)
	}
}

func validateReplication(value string) error {
	if value == "all" {
		return nil
	}
	if n, err := strconv.Atoi(value); err != nil || n < 1 || n > 64 {
		return fmt.Errorf("%s must be \"all\" or a number of copies from 1 to 64, not %q", CfgReplication, value)
	}
	return nil
}

func validateResumeIdle(value string) error {
	if d, err := time.ParseDuration(value); err != nil || d < 0 || d > 24*time.Hour {
		return fmt.Errorf("%s must be a duration such as 1s or 500ms (up to 24h), not %q", CfgResumeIdle, value)
	}
	return nil
}

func validateReplicationRate(value string) error {
	if n, err := bytesize.ParseRate(value); err != nil || n != 0 && n < 64<<10 {
		return fmt.Errorf("%s must be bytes per second such as 64MiB or 100M (powers of 1024), at least 64KiB, or 0 for no cap, not %q", CfgReplicationRate, value)
	}
	return nil
}

// intIn validates a whole number of unit from min to max.
func intIn(key, unit string, min, max int) func(string) error {
	return func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < min || n > max {
			return fmt.Errorf("%s must be a number of %s from %d to %d, not %q", key, unit, min, max, v)
		}
		return nil
	}
}

// durationIn validates a duration from min to max.
func durationIn(key string, min, max time.Duration) func(string) error {
	return func(v string) error {
		if d, err := time.ParseDuration(v); err != nil || d < min || d > max {
			return fmt.Errorf("%s must be a duration such as 10s or 1m, from %s to %s, not %q", key, min, max, v)
		}
		return nil
	}
}

// oneOf validates a value against a fixed list.
func oneOf(key string, values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		quoted := make([]string, len(values))
		for i, s := range values {
			quoted[i] = strconv.Quote(s)
		}
		return fmt.Errorf("%s must be %s, not %q", key, orList(quoted), v)
	}
}

// orList joins "a", "b", "c" as `a, b or c`.
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// DefaultConfig returns the default of every registered setting.
func DefaultConfig() map[string]string {
	settings.RLock()
	defer settings.RUnlock()
	m := make(map[string]string, len(settings.m))
	for k, s := range settings.m {
		m[k] = s.Default
	}
	return m
}

// ValidateSetting checks one key and value.
func ValidateSetting(key, value string) error {
	s, ok := LookupSetting(key)
	if !ok {
		return fmt.Errorf("unknown setting %q (known: %s)", key, strings.Join(slices.Sorted(maps.Keys(DefaultConfig())), ", "))
	}
	return s.Validate(value)
}

// Config is a typed view of the catalogue's settings.
type Config struct {
	// Replicas is the number of copies per file; 0 means every node.
	Replicas    int
	LocalOnly   bool
	Resume      string
	ResumeIdle  time.Duration
	ResumeReads int
	// ReplicationRate caps each node's replica fetches, bytes/s; 0: none.
	ReplicationRate int64
	// Hot files gain replicas (hot.*; 0 reads: off).
	HotReads  int
	HotWindow time.Duration
	HotCool   time.Duration
	HotMax    int
}

// ParseConfig turns validated settings into a Config (defaults fill gaps).
func ParseConfig(m map[string]string) Config {
	get := func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		s, _ := LookupSetting(k)
		return s.Default
	}
	var c Config
	if v := get(CfgReplication); v != "all" {
		c.Replicas, _ = strconv.Atoi(v)
	}
	c.LocalOnly = get(CfgDurability) == "local"
	c.Resume = get(CfgResume)
	c.ResumeIdle, _ = time.ParseDuration(get(CfgResumeIdle))
	c.ResumeReads, _ = strconv.Atoi(get(CfgResumeReads))
	c.ReplicationRate, _ = bytesize.ParseRate(get(CfgReplicationRate))
	c.HotReads, _ = strconv.Atoi(get(CfgHotReads))
	c.HotWindow, _ = time.ParseDuration(get(CfgHotWindow))
	c.HotCool, _ = time.ParseDuration(get(CfgHotCool))
	c.HotMax, _ = strconv.Atoi(get(CfgHotMax))
	return c
}
