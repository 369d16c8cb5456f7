package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// proposal is one entry to commit: a core command or another namespace's
// op.
type proposal struct {
	cmd *meta.Command
	op  *meta.Op
	// binary: every voter applies core v7, so a Commit is written in
	// binary (meta.Command.EncodeBinary); set on the leader.
	binary bool
}

func (p proposal) String() string {
	if p.op != nil {
		return fmt.Sprintf("%s v%d %s", p.op.NS, p.op.V, p.op.Kind)
	}
	if p.cmd.Path != "" {
		return string(p.cmd.Kind) + " " + p.cmd.Path
	}
	if n := len(p.cmd.Items); n > 0 {
		return fmt.Sprintf("%s of %d files", p.cmd.Kind, n)
	}
	return string(p.cmd.Kind)
}

func (p proposal) encode() ([]byte, error) {
	if p.op != nil {
		return p.op.Encode()
	}
	if p.binary {
		if b, ok, err := p.cmd.EncodeBinary(); ok || err != nil {
			return b, err
		}
	}
	return p.cmd.Encode()
}

// peerPath and body are how a follower forwards the proposal to the
// leader. A leader older than namespaces answers 404 to an op: an error,
// not retried.
func (p proposal) peerPath() string {
	if p.op != nil {
		return "/peer/cluster/op"
	}
	return "/peer/cluster/apply"
}

func (p proposal) body() any {
	if p.op != nil {
		return p.op
	}
	return p.cmd
}

// namespace returns the namespace version the proposal needs.
func (p proposal) namespace() (string, int) {
	switch {
	case p.op != nil:
		return p.op.NS, p.op.V
	case p.cmd.Kind == meta.KindSettles:
		return meta.NSCore, 6 // one entry for many versions' settles
	case p.cmd.Kind == meta.KindReplicas || p.cmd.Kind == meta.KindReleases:
		return meta.NSCore, 5 // one entry for many files' replicas or releases
	case p.cmd.Kind == meta.KindDrop && p.cmd.Keep > 0:
		return meta.NSCore, 4 // a conditional drop (a hot file's extra copy)
	case p.cmd.Kind == meta.KindCommit && (p.cmd.MD5 != "" || p.cmd.Attrs != nil):
		return meta.NSCore, 3 // a commit with the content's MD5 or attributes
	case p.cmd.Kind == meta.KindCommit && p.cmd.Take:
		return meta.NSCore, 2 // a commit that takes the right
	case p.cmd.Kind == meta.KindSetConfig:
		// A setting belongs to the namespace version that introduced it: a
		// node that does not know it would refuse the value the others
		// accept.
		if s, ok := meta.LookupSetting(p.cmd.Key); ok {
			return s.Namespace, s.Version
		}
	}
	return meta.NSCore, 1
}

// checkSupported refuses, on the leader, a proposal that a voter's state
// machine may not apply (docs/decisions/0012-versioned-namespaces.md).
// The core at version 1 is applied by every binary: no check. For a
// Commit it also says whether every voter reads Commit entries in binary
// (core v7, decision 0061).
func (c *Cluster) checkSupported(p proposal) (binary bool, err error) {
	ns, v := p.namespace()
	commit := p.cmd != nil && p.cmd.Kind == meta.KindCommit
	if ns == meta.NSCore && v <= 1 && !commit {
		return false, nil
	}
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, fmt.Errorf("check %s: %w", p, err)
	}
	var voters []string
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
		}
	}
	sup := c.Supports()
	if err := meta.CheckSupported(ns, v, voters, sup); err != nil {
		return false, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return commit && meta.CheckSupported(meta.NSCore, meta.CoreBinaryCommit, voters, sup) == nil, nil
}

// Supports returns what every member gossips it supports, this node
// included; a member not heard from, or older than namespaces, is absent.
// The maps are shared: read them only.
func (c *Cluster) Supports() map[string]meta.Supports {
	out := c.gossip.supports()
	out[c.cfg.NodeID] = c.fsm.Supports()
	return out
}
