package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mure-dev/mure/client"
)

func init() { register("rm", "delete files", runRm) }

func runRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("rm", "PATH...", "Delete files.", stderr)
	ifMatch := fs.String("if-match", "", "delete only if the current ETag is `ETAG` (one PATH)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 1, -1); err != nil {
		return err
	}
	if *ifMatch != "" && len(pos) > 1 {
		return usageError(fs, "--if-match takes a single PATH")
	}
	c := cf.client()
	if len(pos) == 1 {
		return c.Delete(ctx, pos[0], &client.DeleteOptions{IfMatch: *ifMatch})
	}
	var errs []error
	for _, p := range pos {
		if err := c.Delete(ctx, p, nil); err != nil {
			err = fmt.Errorf("%s: %w", p, err)
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(stderr, "mure rm: %v\n", err)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return &summaryError{msg: fmt.Sprintf("%d of %d deletions failed", len(errs), len(pos)), errs: errs}
	}
	return nil
}

// summaryError reports a count while wrapping errors already printed.
type summaryError struct {
	msg  string
	errs []error
}

func (e *summaryError) Error() string   { return e.msg }
func (e *summaryError) Unwrap() []error { return e.errs }
