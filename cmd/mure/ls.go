package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mure-dev/mure/client"
)

func init() { register("ls", "list files", runLs) }

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("ls", "[PREFIX]", "List the files under PREFIX, sorted by path.\n"+
		"Output: SIZE  MODIFIED  PATH per file, DIR  PATH/ per common prefix\n"+
		"(--json: one JSON object per line).", stderr)
	delim := fs.String("d", "/", "group paths by `DELIM` after the prefix")
	recursive := fs.Bool("r", false, "recursive: no delimiter")
	limit := fs.Int("limit", 0, "stop after `N` entries (0: all)")
	consistent := fs.Bool("consistent", false, "catch up with the leader first")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 0, 1); err != nil {
		return err
	}
	if *limit < 0 {
		return usageError(fs, "--limit must be >= 0")
	}
	o := client.ListOptions{Delimiter: *delim, Consistent: *consistent}
	if *recursive {
		o.Delimiter = ""
	}
	if len(pos) == 1 {
		o.Prefix = pos[0]
	}
	c := cf.client()
	left := *limit
	for {
		o.Limit = 0
		if *limit > 0 {
			o.Limit = min(left, 10000)
		}
		page, err := c.List(ctx, o)
		if err != nil {
			return err
		}
		n, err := printPage(stdout, page, left, cf.json)
		if err != nil {
			return err
		}
		left -= n
		if page.Next == "" || (*limit > 0 && left <= 0) {
			return nil
		}
		if page.Next == o.After {
			return fmt.Errorf("listing does not advance (cursor %q)", page.Next)
		}
		o.After = page.Next
	}
}

// printPage prints files and prefixes merged by path, at most max entries
// when max > 0, and returns how many it printed.
func printPage(w io.Writer, p *client.ListPage, max int, asJSON bool) (int, error) {
	i, j, n := 0, 0, 0
	for (i < len(p.Files) || j < len(p.Prefixes)) && (max <= 0 || n < max) {
		var err error
		if j >= len(p.Prefixes) || (i < len(p.Files) && p.Files[i].Path < p.Prefixes[j]) {
			f := p.Files[i]
			i++
			if asJSON {
				err = jsonLine(w, f)
			} else {
				_, err = fmt.Fprintf(w, "%12d  %-20s  %s\n", f.Size, f.Modified.UTC().Format(time.RFC3339), f.Path)
			}
		} else {
			d := p.Prefixes[j]
			j++
			if asJSON {
				err = jsonLine(w, map[string]string{"prefix": d})
			} else {
				_, err = fmt.Fprintf(w, "%12s  %-20s  %s\n", "DIR", "", d)
			}
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
