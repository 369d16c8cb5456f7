package main

import (
	"flag"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/sessions"
)

// sessionFlags declares the sessions' flags of mure serve on fs; the
// returned function finishes the configuration after parsing.
func sessionFlags(fs *flag.FlagSet, cfg *node.Config) func() {
	fs.Var((*kindList)(&cfg.Sessions.Kinds), "session-kind",
		"offer a session kind: `'NAME TYPE [idle=D] [warn=D] [restart=elsewhere] [memory=SIZE] [cpus=N] [processes=N] [place=POLICY] [-- COMMAND ARGS...]'`, TYPE shell, command or web, POLICY asked (default), fewest-sessions, most-free-memory, least-load, p2c or round-robin (repeatable; 'shell' is always offered; docs/sessions.md)")
	fs.StringVar(&cfg.Sessions.AccountPrefix, "session-account-prefix", sessions.DefaultAccountPrefix,
		"a user's sessions run as the Unix account PREFIX+user (create it on every node: useradd -m PREFIXalice)")
	fs.DurationVar(&cfg.Sessions.LostAfter, "session-lost-after", 5*time.Second,
		"a node dead this long has its sessions marked lost, or restarted elsewhere for kinds with restart=elsewhere")
	fs.IntVar(&cfg.Sessions.MaxPerNode, "session-max-per-node", 0,
		"the most sessions a node runs (0: no limit): placement skips a node that has them; give every node the same")
	fs.IntVar(&cfg.Sessions.MaxPerUser, "session-max-per-user", 0, "the most sessions a user runs at once (0: no limit)")
	limits := fs.Bool("session-limits", true, "enforce the kinds' memory, CPU and process limits with cgroups where this node can create them")
	return func() {
		if *limits {
			cfg.Sessions.Cgroups = sessions.DetectCgroups()
		}
	}
}

// kindList is the repeatable --session-kind flag; in a config file, one
// "session-kind = ..." line per kind.
type kindList []sessions.Kind

func (l *kindList) String() string {
	if l == nil {
		return ""
	}
	var names []string
	for _, k := range *l {
		names = append(names, k.Name)
	}
	return strings.Join(names, ",")
}

func (l *kindList) Set(s string) error {
	k, err := sessions.ParseKind(s)
	if err != nil {
		return err
	}
	*l = append(*l, k)
	return nil
}
