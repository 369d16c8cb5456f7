package main

import (
	"flag"
	"strings"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/node"
)

// authFlags declares the security model's flags of mure serve on fs; the
// returned function checks them after parsing and fills cfg.Auth.
func authFlags(fs *flag.FlagSet, cfg *node.Config) func() error {
	secretVar(fs, &cfg.Token, "token", "MURE_TOKEN", "deprecated: a static admin bearer `TOKEN` (default $MURE_TOKEN); switches --auth on. Use users' tokens (mure token create)")
	secure := fs.Bool("auth", true, "every client request authenticates (a bearer token, or a user's password or access key by Basic over TLS or from loopback); /healthz and /readyz stay open. --auth=false opens the API to whoever reaches it (docs/security.md)")
	anon := fs.String("anonymous-read", "", "comma-separated file key prefixes anyone may read without credentials (e.g. pub/; \"\" for none; a lone comma-free value \"*\" opens every file)")
	secretVar(fs, &cfg.Auth.MetricsToken, "metrics-token", "MURE_METRICS_TOKEN", "a bearer `TOKEN` that may read /metrics and nothing else (default $MURE_METRICS_TOKEN; without it /metrics needs an admin when --auth is on)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM `FILE` of the client ports' TLS certificate (with --tls-key: both ports speak HTTPS only; reloaded on SIGHUP; mure ca issue makes one)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM `FILE` of the TLS certificate's private key")
	return func() error {
		cfg.Auth.Open = !*secure
		for _, p := range strings.Split(*anon, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if p == "*" {
				p = ""
			}
			g, err := auth.ParseGrant("ro:" + p)
			if err != nil {
				return err
			}
			cfg.Auth.AnonymousRead = append(cfg.Auth.AnonymousRead, g)
		}
		return nil
	}
}
