package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mure-dev/mure/internal/certs"
)

func init() { register("ca", "make a cluster CA and issue node certificates for TLS", runCA) }

func runCA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, _ := newFlagSet("ca", "init | issue NAME",
		"init:  create a CA in --dir (ca.crt, and ca.key with mode 0600: keep it off the nodes)\n"+
			"issue: make NAME.crt and NAME.key (0600) in --dir for a node's client ports, valid for --host\n"+
			"Nodes use them with --tls-cert NAME.crt --tls-key NAME.key; clients trust ca.crt with --ca.", stderr)
	dir := fs.String("dir", ".", "the CA's `DIR`")
	name := fs.String("name", "mure cluster CA", "init: the CA's common name")
	hosts := fs.String("host", "", "issue: comma-separated host names and IP addresses the certificate is valid for")
	days := fs.Int("days", 365, "issue: validity in days")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing subcommand")
	}
	switch pos[0] {
	case "init":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		if err := certs.InitCA(*dir, *name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "CA in %s (%s; %s is secret)\n", *dir, certs.CACert, certs.CAKey)
		return nil
	case "issue":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		var hs []string
		for _, h := range strings.Split(*hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hs = append(hs, h)
			}
		}
		if len(hs) == 0 {
			return usageError(fs, "issue needs --host (the names and addresses clients use)")
		}
		cert, key := filepath.Join(*dir, pos[1]+".crt"), filepath.Join(*dir, pos[1]+".key")
		if err := certs.Issue(*dir, hs, *days, cert, key); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s and %s for %s: mure serve --tls-cert %s --tls-key %s\n", cert, key, strings.Join(hs, ", "), cert, key)
		return nil
	}
	return usageError(fs, "unknown subcommand %q", pos[0])
}
