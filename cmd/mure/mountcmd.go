package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/mount"
)

func init() { register("mount", "mount the cluster as a directory (FUSE)", runMount) }

// runMount mounts the cluster on DIR until interrupted (or unmounted with
// fusermount3 -u DIR).
func runMount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("mount", "DIR",
		"Mount the cluster on DIR through FUSE (needs /dev/fuse and fusermount3, Debian's fuse3),\n"+
			"as the user of the credential. Give several --node addresses to fail over when one dies.\n"+
			"Consistency is close-to-open: a file written here is visible to others when closed.", stderr)
	spool := fs.String("spool", "", "`DIR` for the temporary files that hold what is written until close (default: the system's)")
	timeout := fs.Duration("op-timeout", 30*time.Second, "a call to the cluster (or one read) that takes longer fails with EIO")
	debug := fs.Bool("debug", false, "log every FUSE request")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs, pos, 1, 1); err != nil {
		return err
	}
	m, err := mount.New(pos[0], mount.Config{Files: cf.client(client.WithForwarding()), Spool: *spool, OpTimeout: *timeout, Debug: *debug})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mounted on %s; Ctrl-C (or fusermount3 -u %s) unmounts\n", pos[0], pos[0])
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	return m.Close(10 * time.Second)
}
