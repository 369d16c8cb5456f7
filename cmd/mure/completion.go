package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mure-dev/mure/internal/bench"
	"github.com/mure-dev/mure/internal/meta"
)

// positional lists the words a command takes first (its verbs).
func positional(name string) []string {
	switch name {
	case "node":
		return []string{"leave", "remove", "list"}
	case "config":
		return []string{"get", "set"}
	case "bench":
		var out []string
		for _, s := range bench.Scenarios() {
			out = append(out, s.Name)
		}
		return append(out, "combine")
	case "testbed":
		return []string{"up", "down", "exec", "loss", "kill", "stop", "cont", "start", "cut", "heal", "bench"}
	}
	return nil
}

// completer completes a command's flags (from its own usage) and its
// verbs; file names otherwise.
func completer(name string, cmd command) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.HasPrefix(cmd.summary, "(internal)") {
			return nil, cobra.ShellCompDirectiveNoFileComp // it reads stdin: never run it to learn its flags
		}
		if strings.HasPrefix(toComplete, "-") {
			return matching(flagNames(cmd), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		pos := positionalArgs(args)
		switch {
		case len(pos) == 0 && positional(name) != nil:
			return matching(positional(name), toComplete), cobra.ShellCompDirectiveNoFileComp
		case name == "config" && len(pos) == 1 && (pos[0] == "get" || pos[0] == "set"):
			// Every binary registers every setting (meta.RegisterSetting).
			return matching(slices.Sorted(maps.Keys(meta.DefaultConfig())), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
}

// positionalArgs drops flags (and a value following a flag without "=")
// from args; a best guess without the command's flag types.
func positionalArgs(args []string) []string {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") && !isBoolFlag(args[i-1]) {
			continue // the previous flag's value
		}
		pos = append(pos, a)
	}
	return pos
}

// isBoolFlag guesses the common boolean flags, which take no value.
func isBoolFlag(f string) bool {
	switch strings.TrimLeft(f, "-") {
	case "json", "r", "create", "h", "help":
		return true
	}
	return false
}

// flagNames returns a command's flags as "--name", read from the usage its
// own -h prints (the flag package's PrintDefaults: "  -name ...").
func flagNames(cmd command) []string {
	var buf bytes.Buffer
	_ = cmd.run(context.Background(), []string{"-h"}, io.Discard, &buf)
	var out []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
		name, _, _ = strings.Cut(name, "\t")
		if name != "" {
			out = append(out, "--"+name)
		}
	}
	return out
}

func matching(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
