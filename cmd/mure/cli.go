package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/sessions"
)

// clientFlags are the flags common to every client command.
type clientFlags struct {
	fs     *flag.FlagSet
	nodes  string
	token  string
	data   string
	ca     string
	json   bool
	stderr io.Writer
}

// newFlagSet returns a flag set with the common client flags; synopsis
// follows "mure NAME [flags]" in the usage, help is printed below it.
func newFlagSet(name, synopsis, help string, stderr io.Writer) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		line := strings.TrimSpace("usage: mure " + name + " [flags] " + synopsis)
		fmt.Fprintf(stderr, "%s\n\n%s\n\nflags:\n", line, help)
		fs.PrintDefaults()
	}
	cf := &clientFlags{fs: fs, stderr: stderr}
	node := os.Getenv("MURE_NODE")
	if node == "" {
		node = client.DefaultNode
	}
	fs.StringVar(&cf.nodes, "node", node, "comma-separated node `ADDR`s to talk to (env MURE_NODE; default with --data: that node)")
	secretVar(fs, &cf.token, "token", "MURE_TOKEN", "API bearer `TOKEN` (env MURE_TOKEN); without it, MURE_USER and MURE_PASSWORD, or --data")
	fs.StringVar(&cf.data, "data", os.Getenv("MURE_DATA"), "a node's data `DIR` on this machine: use its admin credential (DIR/admin.token; env MURE_DATA)")
	fs.StringVar(&cf.ca, "ca", os.Getenv("MURE_CA"), "trust this CA certificate `FILE` (mure ca init), or this PEM text, for https:// nodes (env MURE_CA; a session on a TLS node has it)")
	fs.BoolVar(&cf.json, "json", false, "machine-readable JSON output")
	return fs, cf
}

// secretVar declares a string flag whose default is the environment
// variable env, like fs.StringVar, except that the usage never prints the
// value: usage goes to terminals and CI logs on every flag mistake.
func secretVar(fs *flag.FlagSet, p *string, name, env, usage string) {
	*p = os.Getenv(env)
	fs.Var(secretFlag{p}, name, usage)
}

// secretFlag is a string flag that shows no value (see secretVar).
type secretFlag struct{ p *string }

func (s secretFlag) String() string     { return "" }
func (s secretFlag) Set(v string) error { *s.p = v; return nil }

// client returns a client of --node with the first credential found:
// --token (MURE_TOKEN), MURE_USER and MURE_PASSWORD, the credential of
// the session this runs in (MURE_SESSION_TOKEN: it may only start and
// attach to the session's children, mure run), or the admin credential
// of the node whose data directory --data names.
func (cf *clientFlags) client(more ...client.Option) *client.Client {
	opts := append([]client.Option{cf.credential()}, more...)
	if cf.ca != "" {
		pool, err := certs.LoadPool(cf.ca)
		if err != nil {
			fmt.Fprintf(cf.stderr, "mure: --ca: %v; using the system's roots\n", err)
		} else {
			opts = append(opts, client.WithCA(pool))
		}
	}
	return client.New(strings.Split(cf.nodeList(), ","), opts...)
}

// nodeList is --node; without it (nor MURE_NODE), the node whose data
// directory --data names, at the address it recorded there: a client on a
// node's machine talks to that node, wherever it listens.
func (cf *clientFlags) nodeList() string {
	set := os.Getenv("MURE_NODE") != ""
	if cf.fs != nil {
		cf.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "node" })
	}
	if !set && cf.data != "" {
		if u := node.ReadClientURL(cf.data); u != "" {
			return u
		}
	}
	return cf.nodes
}

func (cf *clientFlags) credential() client.Option {
	if cf.token != "" {
		return client.WithToken(cf.token)
	}
	sess := os.Getenv(sessions.CredentialEnv)
	// A session's program has MURE_USER (its user's name) but no password.
	if u := os.Getenv("MURE_USER"); u != "" && (os.Getenv("MURE_PASSWORD") != "" || sess == "") {
		return client.WithBasicAuth(u, os.Getenv("MURE_PASSWORD"))
	}
	if sess != "" {
		return client.WithToken(sess)
	}
	if cf.data != "" {
		b, err := os.ReadFile(filepath.Join(cf.data, node.AdminTokenFile))
		if err == nil {
			return client.WithToken(strings.TrimSpace(string(b)))
		}
		fmt.Fprintf(cf.stderr, "mure: no admin credential in --data %s (%v); sending none\n", cf.data, err)
	}
	return client.WithToken("")
}

// parseArgs parses flags placed anywhere among the arguments (until "--")
// and returns the positional arguments. Mistakes return errUsage.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, errUsage
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints msg and the usage of fs.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "mure %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return errUsage
}

// checkArgs checks the number of positional arguments.
func checkArgs(fs *flag.FlagSet, pos []string, min, max int) error {
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return usageError(fs, "wrong number of arguments")
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// indentJSON pretty-prints raw JSON.
func indentJSON(w io.Writer, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return writeJSON(w, v)
}

// jsonLine writes v as one line of JSON.
func jsonLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
