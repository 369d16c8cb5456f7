package main

import (
	"flag"
	"strings"

	"github.com/mure-dev/mure/internal/apps"
	"github.com/mure-dev/mure/internal/node"
)

// appsFlags declares the apps' flags of mure serve on fs: CGI programs and
// proxied apps.
func appsFlags(fs *flag.FlagSet, cfg *node.Config) {
	fs.StringVar(&cfg.CGIDir, "cgi-dir", "", "serve the executable files in `DIR` as CGI programs at /cgi/NAME (default: off)")
	fs.IntVar(&cfg.CGIMaxRunning, "cgi-max-running", 0, "CGI programs running at once; more requests wait for a slot (0: 4 per core the node may use)")
	fs.IntVar(&cfg.CGINice, "cgi-nice", 10, "run CGI programs at this niceness (0-19), so that a node busy with them still answers its peers and its other clients first (0: the node's own)")
	fs.DurationVar(&cfg.CGITimeout, "cgi-timeout", apps.DefaultCGITimeout, "kill a CGI program, and what it started, still running after this long")
	fs.Var((*appList)(&cfg.Apps), "app", "serve an app by reverse proxy: `PREFIX=URL` sends PREFIX/rest to URL/rest, e.g. /shop/=http://127.0.0.1:9000 (repeatable)")
}

// appList is the repeatable --app flag; in a config file, one
// "app = PREFIX=URL" line per app.
type appList []apps.Proxy

func (l *appList) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	for _, p := range *l {
		parts = append(parts, p.Prefix+"="+p.Target.String())
	}
	return strings.Join(parts, " ")
}

func (l *appList) Set(s string) error {
	p, err := apps.ParseProxy(s)
	if err != nil {
		return err
	}
	*l = append(*l, p)
	return nil
}
