package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mure-dev/mure/client"
)

func init() { register("put", "write a file", runPut) }

func runPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("put", "PATH [FILE|-]", "Write FILE (standard input when absent or -) to PATH.", stderr)
	ifMatch := fs.String("if-match", "", "replace only if the current ETag is `ETAG`")
	create := fs.Bool("create", false, "create only: fail if PATH exists")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 1, 2); err != nil {
		return err
	}
	if *ifMatch != "" && *create {
		return usageError(fs, "--if-match and --create are exclusive")
	}
	opts := &client.PutOptions{IfMatch: *ifMatch, IfNoneMatch: *create}
	var body io.Reader = struct{ io.Reader }{os.Stdin} // not seekable
	if len(pos) == 2 && pos[1] != "-" {
		f, err := os.Open(pos[1])
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			return fmt.Errorf("%s is a directory", pos[1])
		case st.Mode().IsRegular() && st.Size() == 0:
			body = nil
		case st.Mode().IsRegular():
			body, opts.Size = f, st.Size()
		default:
			body = struct{ io.Reader }{f}
		}
	}
	info, err := cf.client().Put(ctx, pos[0], body, opts)
	if err != nil {
		return err
	}
	if cf.json {
		return writeJSON(stdout, info)
	}
	_, err = fmt.Fprintf(stdout, "%s version %d etag %s size %d\n", info.Path, info.Version, info.ETag, info.Size)
	return err
}
