package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mure-dev/mure/client"
)

func init() {
	register("user", "add, change, list or remove users", runUser)
	register("whoami", "show who the node takes your credential for", runWhoami)
}

// grantList collects repeated --grant flags.
type grantList []string

func (g *grantList) String() string     { return strings.Join(*g, ",") }
func (g *grantList) Set(v string) error { *g = append(*g, v); return nil }

func runUser(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("user", "add NAME | set NAME | passwd NAME | list | rm NAME",
		"add:    create a user; its password is read from stdin (one line), unless --no-password\n"+
			"set:    change a user's role (--admin, --grant); admins only\n"+
			"passwd: change a user's password, read from stdin (a user may change its own)\n"+
			"list:   list the users (admins only)\n"+
			"rm:     delete a user with its tokens and access keys\n"+
			"Grants are rw:PREFIX (read and write the files under PREFIX) or ro:PREFIX.", stderr)
	admin := fs.Bool("admin", false, "the user is an admin (everything: settings, members, users, every file)")
	noPassword := fs.Bool("no-password", false, "add: a user without a password (it uses tokens or access keys only)")
	var grants grantList
	fs.Var(&grants, "grant", "a grant `rw:PREFIX` or `ro:PREFIX` (repeat the flag for several); set: replaces the user's grants")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs, "missing subcommand")
	}
	c := cf.client()
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch pos[0] {
	case "add":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		u := client.UserChange{Name: pos[1], Admin: admin, Grants: (*[]string)(&grants)}
		if !*noPassword {
			pw, err := readPassword(stderr)
			if err != nil {
				return err
			}
			u.Password = &pw
		}
		got, err := c.AddUser(ctx, u)
		if err != nil {
			return err
		}
		return printUsers(stdout, cf.json, []client.User{got})
	case "set":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		var u client.UserChange
		if given["admin"] {
			u.Admin = admin
		}
		if given["grant"] {
			u.Grants = (*[]string)(&grants)
		}
		got, err := c.SetUser(ctx, pos[1], u)
		if err != nil {
			return err
		}
		return printUsers(stdout, cf.json, []client.User{got})
	case "passwd":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		pw, err := readPassword(stderr)
		if err != nil {
			return err
		}
		_, err = c.SetUser(ctx, pos[1], client.UserChange{Password: &pw})
		return err
	case "list":
		if err := checkArgs(fs, pos, 1, 1); err != nil {
			return err
		}
		us, err := c.Users(ctx)
		if err != nil {
			return err
		}
		return printUsers(stdout, cf.json, us)
	case "rm":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		return c.DeleteUser(ctx, pos[1])
	}
	return usageError(fs, "unknown subcommand %q", pos[0])
}

// readPassword reads one line from stdin (a terminal echoes it: prefer a
// pipe, e.g. from a password manager).
func readPassword(stderr io.Writer) (string, error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprint(stderr, "password (read from stdin, echoed): ")
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func printUsers(w io.Writer, asJSON bool, us []client.User) error {
	if asJSON {
		return writeJSON(w, us)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tROLE\tPASSWORD\tCREATED")
	for _, u := range us {
		role := strings.Join(u.Grants, ",")
		if u.Admin {
			role = "admin"
		}
		if role == "" {
			role = "(no grant)"
		}
		pw := "no"
		if u.HasPassword {
			pw = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, role, pw, u.Created.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func runWhoami(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("whoami", "", "Show who the node takes your credential for, and its role.", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	p, err := cf.client().WhoAmI(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return writeJSON(stdout, p)
	}
	role := strings.Join(p.Grants, ",")
	if p.Admin {
		role = "admin"
	}
	via := p.Via
	if p.Credential != "" {
		via += " " + p.Credential
	}
	_, err = fmt.Fprintf(stdout, "%s (%s) via %s\n", p.User, role, via)
	return err
}
