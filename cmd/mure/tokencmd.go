package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

func init() {
	register("token", "create, list or revoke bearer tokens", runToken)
	register("key", "create, list or delete access keys (id and secret)", runKey)
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("token", "create NAME | list | revoke NAME",
		"create: make a bearer token; it is printed once and kept nowhere in clear\n"+
			"list:   list tokens (names and expiry, never the tokens)\n"+
			"revoke: revoke a token at once, on every node\n"+
			"Without --user, your own; an admin may name anyone.", stderr)
	user := fs.String("user", "", "the token's `USER` (default: yourself)")
	ttl := fs.Duration("ttl", 0, "create: the token expires after this long (e.g. 720h; 0: never)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing subcommand")
	}
	c := cf.client()
	switch pos[0] {
	case "create":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		t, err := c.CreateToken(ctx, *user, pos[1], *ttl)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, t)
		}
		fmt.Fprintln(stdout, t.Token)
		fmt.Fprintf(stderr, "token %s of %s: shown once; use it as MURE_TOKEN or 'Authorization: Bearer TOKEN'\n", t.Name, t.User)
		return nil
	case "list":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		ts, err := c.Tokens(ctx, *user)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, ts)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tTOKEN\tCREATED\tEXPIRES")
		for _, t := range ts {
			exp := "never"
			if !t.Expires.IsZero() {
				exp = t.Expires.Local().Format("2006-01-02 15:04")
				if time.Now().After(t.Expires) {
					exp += " (expired)"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.User, t.Name, t.Created.Local().Format("2006-01-02 15:04"), exp)
		}
		return tw.Flush()
	case "revoke":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		u := *user
		if u == "" {
			p, err := c.WhoAmI(ctx)
			if err != nil {
				return err
			}
			u = p.User
		}
		return c.RevokeToken(ctx, u, pos[1])
	}
	return usageError(fs, "unknown subcommand %q", pos[0])
}

func runKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("key", "create | list | rm ID",
		"create: make an access key (an ID and a secret, for S3-style clients); the secret is printed once\n"+
			"list:   list access keys (IDs, never secrets)\n"+
			"rm:     delete an access key\n"+
			"Without --user, your own; an admin may name anyone.", stderr)
	user := fs.String("user", "", "the key's `USER` (default: yourself)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing subcommand")
	}
	c := cf.client()
	switch pos[0] {
	case "create":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		k, err := c.CreateAccessKey(ctx, *user)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, k)
		}
		fmt.Fprintf(stdout, "id      %s\nsecret  %s\n", k.ID, k.Secret)
		fmt.Fprintf(stderr, "access key of %s: the secret is shown once\n", k.User)
		return nil
	case "list":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		ks, err := c.AccessKeys(ctx, *user)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, ks)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tUSER\tCREATED")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.User, k.Created.Local().Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case "rm":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		return c.DeleteAccessKey(ctx, pos[1])
	}
	return usageError(fs, "unknown subcommand %q", pos[0])
}
