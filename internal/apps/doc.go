// Package apps serves dynamic content on every node (paper 001): CGI
// programs under /cgi/NAME and proxied apps under operator-chosen path
// prefixes. It owns no replicated state: every node runs the same
// programs and proxies to its own local apps, so a front door may send
// any request to any node.
//
// # CGI
//
// GET or POST /cgi/NAME[/path/info] runs the executable CGIDir/NAME with
// net/http/cgi (RFC 3875). NAME is a plain file name; the program gets
// the usual CGI environment plus MURE_NODE (this node's ID). Its stderr
// goes to the node's log, one line per record.
//
// Stopping a program. cgi.Handler builds its exec.Cmd inside ServeHTTP:
// no context, no SysProcAttr (so no process group), no WaitDelay. It
// kills the program only when copying the body to a departed client
// fails; a program that computes, or waits, before its first byte runs
// as long as it likes, and anything it started runs on. So each run gets
// a context (the request's, bounded by CGITimeout and by Close), and a
// marker in its environment (MURE_CGI_RUN=<random>) that every process
// it starts inherits. When the context ends, the reaper (one goroutine
// for all runs) sends SIGKILL to every process whose initial environment
// (/proc/PID/environ) holds the marker, and again every 250 ms until
// cgi.Handler returns, so a process forked meanwhile is caught too. Killing the processes closes
// the program's stdout, so cgi.Handler returns; the client gets 504
// (timeout) or, if the response had started, a cut connection. This
// needs Linux's /proc; elsewhere the deadline is not enforced (see
// stop_other.go). A process that execs itself with a cleaned environment
// escapes the marker.
//
// Alternatives weighed: a supervisor (this binary re-executed, or the
// coreutils timeout) as cgi.Handler's Path would own a process group, but
// could not learn that the client left, and re-executing the binary
// breaks in-process test nodes; writing our own CGI host would bypass
// the standard library's CGI parsing.
//
// # Proxied apps
//
// Each Proxy sends PREFIX/rest to Target/rest with
// httputil.ReverseProxy (like nginx's proxy_pass with a trailing slash),
// setting X-Forwarded-For, -Host, -Proto and X-Forwarded-Prefix. An app
// that cannot be reached is answered with 502 (504 on a timeout) and the
// JSON error envelope naming the app, its target and the error.
//
// The caller's credential never reaches an app: the node's guard
// (internal/auth/authhttp) removes the Authorization header once it has
// authenticated the request and sets X-Mure-User to the caller's name
// (HTTP_X_MURE_USER for a CGI program). A client's own X-Mure-User never
// passes, with authentication on or off: an app can trust the header.
//
// # Metrics
//
// mure_app_requests_total{app,class} and
// mure_app_request_duration_seconds{app}, where app is "cgi/NAME" for an
// existing program ("cgi" for refused names), or the proxy's Name.
package apps
