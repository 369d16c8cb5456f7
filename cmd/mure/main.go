// Command mure runs a mure node and talks to a mure cluster.
//
// mure serve starts a node; the other subcommands are clients of the HTTP
// API of any node (see docs/protocol.md). The command tree is cobra's, for
// help and shell completion; each subcommand parses its own flags with the
// standard flag package (flags may come anywhere among its arguments).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// command is one subcommand: it parses its own flags from args and writes
// its output to stdout. Returning errUsage prints the command's usage.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// errUsage marks a command-line mistake; the message has already been printed.
var errUsage = errors.New("usage")

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if _, ok := commands[args[0]]; !ok && !slices.Contains(builtins, args[0]) && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "mure: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(ctx, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	var ce *commandError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "mure %s: %v\n", ce.name, ce.err)
	default:
		fmt.Fprintf(stderr, "mure: %v\n", err)
	}
	return 1
}

// builtins are the commands cobra adds: help, shell completion scripts and
// the hidden ones the scripts call.
var builtins = []string{"help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd}

// commandError is a subcommand's failure, printed as "mure NAME: ERR".
type commandError struct {
	name string
	err  error
}

func (e *commandError) Error() string { return e.name + ": " + e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// newRoot builds the command tree: one cobra command per registered
// subcommand, which hands its arguments, flags included, to the
// subcommand's own parser.
func newRoot(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "mure",
		Short:         "mure — a flock of machines serving as one",
		SilenceErrors: true,
		SilenceUsage:  true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { usage(c.ErrOrStderr()) })
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "show the commands, or one command's usage and flags",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				usage(stderr)
				return nil
			}
			cmd, ok := commands[args[0]]
			if !ok {
				fmt.Fprintf(stderr, "mure help: unknown command %q\n\n", args[0])
				usage(stderr)
				return errUsage
			}
			return helpOf(ctx, args[0], cmd, stderr)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return commandNames(), cobra.ShellCompDirectiveNoFileComp
		},
	})
	for _, name := range commandNames() {
		cmd := commands[name]
		root.AddCommand(&cobra.Command{
			Use:                name,
			Short:              cmd.summary,
			Hidden:             strings.HasPrefix(cmd.summary, "(internal)"),
			DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error {
				if wantsHelp(args) && strings.HasPrefix(cmd.summary, "(internal)") {
					// Internal commands read their input elsewhere (stdin).
					fmt.Fprintf(stderr, "usage: mure %s\n\n%s\n", name, cmd.summary)
					return nil
				}
				err := cmd.run(ctx, args, stdout, stderr)
				if err != nil && wantsHelp(args) && (errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp)) {
					return nil // the usage asked for was printed
				}
				if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, flag.ErrHelp) {
					return &commandError{name: name, err: err}
				}
				return err
			},
			ValidArgsFunction: completer(name, cmd),
		})
	}
	return root
}

// helpOf prints a command's usage, as its own -h does.
func helpOf(ctx context.Context, name string, cmd command, stderr io.Writer) error {
	if strings.HasPrefix(cmd.summary, "(internal)") {
		fmt.Fprintf(stderr, "usage: mure %s\n\n%s\n", name, cmd.summary)
		return nil
	}
	err := cmd.run(ctx, []string{"-h"}, io.Discard, stderr)
	if err == nil || errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return &commandError{name: name, err: err}
}

// wantsHelp reports whether -h or --help comes before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "mure — a flock of machines serving as one")
	fmt.Fprintln(w, "\nusage: mure COMMAND [flags] [args]\n\ncommands:")
	for _, n := range commandNames() {
		if s := commands[n].summary; !strings.HasPrefix(s, "(internal)") {
			fmt.Fprintf(w, "  %-10s %s\n", n, s)
		}
	}
	fmt.Fprintf(w, "  %-10s %s\n", "completion", "print a shell completion script: mure completion bash|zsh|fish")
	fmt.Fprintln(w, "\nRun 'mure COMMAND --help' (or 'mure help COMMAND') for a command's flags.")
}
