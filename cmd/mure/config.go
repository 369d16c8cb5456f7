package main

import (
	"context"
	"fmt"
	"io"
	"sort"
)

func init() { register("config", "show or change cluster-wide settings", runConfig) }

func runConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("config", "[get KEY | set KEY VALUE]",
		"Without arguments print every cluster-wide setting as KEY=VALUE.", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	c := cf.client()
	var cfg map[string]string
	switch {
	case len(pos) == 0:
		cfg, err = c.Config(ctx)
	case pos[0] == "get" && len(pos) == 2:
		if cfg, err = c.Config(ctx); err != nil {
			return err
		}
		v, ok := cfg[pos[1]]
		if !ok {
			return fmt.Errorf("no setting %q", pos[1])
		}
		if cf.json {
			return writeJSON(stdout, v)
		}
		_, err = fmt.Fprintln(stdout, v)
		return err
	case pos[0] == "set" && len(pos) == 3:
		cfg, err = c.SetConfig(ctx, pos[1], pos[2])
	default:
		return usageError(fs, "want no argument, get KEY or set KEY VALUE")
	}
	if err != nil {
		return err
	}
	if cf.json {
		return writeJSON(stdout, cfg)
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := fmt.Fprintf(stdout, "%s=%s\n", k, cfg[k]); err != nil {
			return err
		}
	}
	return nil
}
