package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mure-dev/mure/client"
)

func init() { register("get", "read a file", runGet) }

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("get", "PATH", "Stream PATH to standard output or to a file.", stderr)
	out := fs.String("o", "", "write to `FILE` (atomically, via FILE.tmp) instead of standard output")
	rng := fs.String("range", "", "read only bytes `a-b` (inclusive; a- for the rest)")
	stale := fs.Bool("stale", false, "accept the node's local copy even if it may be old")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 1, 1); err != nil {
		return err
	}
	opts := &client.GetOptions{Stale: *stale}
	if *rng != "" {
		if opts.Offset, opts.Length, err = parseRange(*rng); err != nil {
			return usageError(fs, "--range: %v", err)
		}
	}
	r, err := cf.client().Get(ctx, pos[0], opts)
	if err != nil {
		return err
	}
	defer r.Close()
	// Verify the content when reading a whole file with a hex SHA-256.
	var sum hash.Hash
	var src io.Reader = r
	if *rng == "" && len(r.Info.SHA256) == 64 {
		if _, err := hex.DecodeString(r.Info.SHA256); err == nil {
			sum = sha256.New()
			src = io.TeeReader(r, sum)
		}
	}
	copyAll := func(w io.Writer) error {
		if _, err := io.Copy(w, src); err != nil {
			return err
		}
		if sum != nil {
			if got := hex.EncodeToString(sum.Sum(nil)); !strings.EqualFold(got, r.Info.SHA256) {
				return fmt.Errorf("%s: content sha256 %s, want %s", pos[0], got, r.Info.SHA256)
			}
		}
		return nil
	}
	if *out == "" {
		return copyAll(stdout)
	}
	return writeAtomic(*out, copyAll)
}

// writeAtomic writes name.tmp with fill, then renames it to name.
func writeAtomic(name string, fill func(io.Writer) error) (err error) {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// parseRange parses "a-b" (inclusive) or "a-" into an offset and a length
// (0: to the end).
func parseRange(s string) (off, n int64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || a == "" {
		return 0, 0, errors.New("want a-b or a-")
	}
	if off, err = strconv.ParseInt(a, 10, 64); err != nil || off < 0 {
		return 0, 0, fmt.Errorf("bad start %q", a)
	}
	if b == "" {
		return off, 0, nil
	}
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil || end < off {
		return 0, 0, fmt.Errorf("bad end %q", b)
	}
	return off, end - off + 1, nil
}
