package main

import (
	"flag"

	"github.com/mure-dev/mure/internal/files/s3"
	"github.com/mure-dev/mure/internal/node"
)

// s3Flags declares the S3 service's flags of mure serve on fs.
func s3Flags(fs *flag.FlagSet, cfg *node.Config) {
	fs.StringVar(&cfg.S3Addr, "s3", "", "serve the S3 API at `ADDR` (host:port): buckets are the top-level folders, requests are signed with access keys (mure s3 key create); default: off")
	fs.DurationVar(&cfg.S3UploadTTL, "s3-upload-ttl", s3.DefaultUploadTTL, "remove S3 multipart uploads left unfinished this long, with their parts")
}
