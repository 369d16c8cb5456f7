package main

import (
	"flag"

	"github.com/mure-dev/mure/internal/node"
)

// webdavFlags declares the WebDAV service's flags of mure serve on fs.
func webdavFlags(fs *flag.FlagSet, cfg *node.Config) {
	fs.StringVar(&cfg.WebDAVAddr, "webdav", "", "serve WebDAV at `ADDR` (host:port): the whole namespace as folders; Basic auth with a password or an access key (TLS or loopback only) or a bearer token; default: off")
}
