package meta

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/bytesize"
	"github.com/mure-dev/mure/internal/dispatch"
)

// Cluster-wide settings, kept in the replicated state and changed with
// `mure config set`. Every key has a default; Set validates values.
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
	// CfgDispatchPolicy: the front door's scheduling policy for the whole
	// cluster (docs/dispatch.md); "" leaves each node's --front-policy.
	// The holder switches at once: the next new connection uses it.
	CfgDispatchPolicy = "dispatch.policy"
)

// Defaults for every setting.
var defaultConfig = map[string]string{
	CfgReplication:     "all",
	CfgDurability:      "two",
	CfgResume:          "idle",
	CfgResumeIdle:      "1s",
	CfgResumeReads:     "3",
	CfgReplicationRate: "64MiB",
	CfgDispatchPolicy:  "",
}

// DefaultConfig returns a copy of the default settings.
func DefaultConfig() map[string]string { return maps.Clone(defaultConfig) }

// ValidateSetting checks one key and value.
func ValidateSetting(key, value string) error {
	switch key {
	case CfgReplication:
		if value == "all" {
			return nil
		}
		if n, err := strconv.Atoi(value); err != nil || n < 1 || n > 64 {
			return fmt.Errorf("%s must be \"all\" or a number of copies from 1 to 64, not %q", key, value)
		}
	case CfgDurability:
		if value != "two" && value != "local" {
			return fmt.Errorf("%s must be \"two\" or \"local\", not %q", key, value)
		}
	case CfgResume:
		if value != "idle" && value != "immediate" && value != "reads" {
			return fmt.Errorf("%s must be \"idle\", \"immediate\" or \"reads\", not %q", key, value)
		}
	case CfgResumeIdle:
		if d, err := time.ParseDuration(value); err != nil || d < 0 || d > 24*time.Hour {
			return fmt.Errorf("%s must be a duration such as 1s or 500ms (up to 24h), not %q", key, value)
		}
	case CfgResumeReads:
		if n, err := strconv.Atoi(value); err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%s must be a number of reads from 1 to 1000, not %q", key, value)
		}
	case CfgReplicationRate:
		if n, err := bytesize.ParseRate(value); err != nil || n != 0 && n < 64<<10 {
			return fmt.Errorf("%s must be bytes per second such as 64MiB or 100M (powers of 1024), at least 64KiB, or 0 for no cap, not %q", key, value)
		}
	case CfgDispatchPolicy:
		if value != "" && !slices.Contains(dispatch.PolicyNames, value) {
			return fmt.Errorf("%s must be one of %s, or empty for each node's --front-policy, not %q", key, strings.Join(dispatch.PolicyNames, ", "), value)
		}
	default:
		return fmt.Errorf("unknown setting %q (known: replication, replication.rate, durability, resume, resume.idle, resume.reads, dispatch.policy)", key)
	}
	return nil
}

// Config is a typed view of the settings.
type Config struct {
	// Replicas is the number of copies per file; 0 means every node.
	Replicas    int
	LocalOnly   bool
	Resume      string
	ResumeIdle  time.Duration
	ResumeReads int
	// ReplicationRate caps each node's replica fetches, bytes/s; 0: none.
	ReplicationRate int64
	// DispatchPolicy overrides the front doors' policy ("": not).
	DispatchPolicy string
}

// ParseConfig turns validated settings into a Config (defaults fill gaps).
func ParseConfig(m map[string]string) Config {
	get := func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return defaultConfig[k]
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
	c.DispatchPolicy = get(CfgDispatchPolicy)
	return c
}
