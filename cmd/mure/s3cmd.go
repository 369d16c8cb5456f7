package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

func init() {
	register("s3", "S3 credentials: mure s3 key create | ls | rm ID", runS3)
}

// s3Key is an access key as S3 clients name its parts.
type s3Key struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	User            string `json:"user"`
}

// runS3 manages the access keys S3 clients sign with (the same keys as
// mure key, named as S3 clients name them).
func runS3(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("s3", "key create | key ls | key rm ID",
		"key create: make an access key for S3 clients; the secret is printed once\n"+
			"key ls:     list access keys (IDs, never secrets)\n"+
			"key rm:     delete an access key (its signatures are refused at once)\n"+
			"Without --user, your own; an admin may name anyone. --json prints access_key_id and secret_access_key.", stderr)
	user := fs.String("user", "", "the key's `USER` (default: yourself)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || pos[0] != "key" {
		return usageError(fs, "usage: mure s3 key create | ls | rm ID")
	}
	c := cf.client()
	switch pos[1] {
	case "create":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		k, err := c.CreateAccessKey(ctx, *user)
		if err != nil {
			return err
		}
		if cf.json {
			return writeJSON(stdout, s3Key{AccessKeyID: k.ID, SecretAccessKey: k.Secret, User: k.User})
		}
		fmt.Fprintf(stdout, "AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n", k.ID, k.Secret)
		fmt.Fprintf(stderr, "access key of %s: the secret is shown once\n", k.User)
		return nil
	case "ls", "list":
		if err := checkArgs(fs, pos, 2, 2); err != nil {
			return err
		}
		ks, err := c.AccessKeys(ctx, *user)
		if err != nil {
			return err
		}
		if cf.json {
			out := make([]s3Key, 0, len(ks))
			for _, k := range ks {
				out = append(out, s3Key{AccessKeyID: k.ID, User: k.User})
			}
			return writeJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ACCESS KEY ID\tUSER\tCREATED")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.User, k.Created.Local().Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case "rm":
		if err := checkArgs(fs, pos, 3, 3); err != nil {
			return err
		}
		return c.DeleteAccessKey(ctx, pos[2])
	}
	return usageError(fs, "unknown subcommand %q", pos[1])
}
