package apps

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/api"
)

// CGIPrefix is where CGI programs are served: /cgi/NAME[/path/info].
const CGIPrefix = "/cgi/"

// runEnv marks every process of one CGI run (see the package comment).
const runEnv = "MURE_CGI_RUN"

// Why a run's context ended (context.Cause), besides the client leaving.
var (
	errTimeout = errors.New("the CGI program ran longer than --cgi-timeout")
	errClosing = errors.New("the node is stopping")
)

// refusal is a request for a program that cannot run.
type refusal struct {
	status    int
	code, msg string
}

func (a *Apps) serveCGI(w http.ResponseWriter, r *http.Request) {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, CGIPrefix), "/")
	path, no := a.program(name)
	if no != nil {
		a.m.serve("cgi", w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api.Error(w, no.status, no.code, no.msg)
		}))
		return
	}
	a.m.serve("cgi/"+name, w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.run(w, r, name, path)
	}))
}

// program returns the path of the executable NAME in CGIDir.
func (a *Apps) program(name string) (string, *refusal) {
	if err := checkName(name); err != nil {
		return "", &refusal{http.StatusBadRequest, api.CodeBadPath, err.Error()}
	}
	path := filepath.Join(a.cfg.CGIDir, name)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", &refusal{http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("no CGI program %q on this node", name)}
	case err != nil:
		return "", &refusal{http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("CGI program %q: %v", name, err)}
	case !fi.Mode().IsRegular():
		return "", &refusal{http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("%q in the CGI directory is not a program file", name)}
	case fi.Mode().Perm()&0o111 == 0:
		return "", &refusal{http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("CGI program %q is not executable (chmod +x it in --cgi-dir)", name)}
	}
	return path, nil
}

// checkName accepts a plain file name: [A-Za-z0-9._-], no leading dot,
// no "..".
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("name a CGI program: /cgi/NAME[/path/info]")
	case len(name) > 255:
		return errors.New("a CGI program's name is at most 255 bytes")
	case name[0] == '.' || strings.Contains(name, ".."):
		return fmt.Errorf("bad CGI program name %q: no leading '.' and no '..'", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("bad CGI program name %q: use only letters, digits and . _ -", name)
		}
	}
	return nil
}

// run executes the program at path for r, bounded by CGITimeout, the
// client and Close.
func (a *Apps) run(w http.ResponseWriter, r *http.Request, name, path string) {
	if r.ContentLength < 0 {
		// cgi.Handler refuses chunked bodies, and CGI gives a program
		// no other way to know where the body ends.
		api.Error(w, http.StatusLengthRequired, api.CodeBadRequest, "a request to a CGI program needs Content-Length (no chunked body)")
		return
	}
	if !a.begin() {
		api.Unavailable(w, 1, api.CodeUnavailable, "the node is stopping")
		return
	}
	defer a.runs.Done()
	if !a.acquire(w, r) {
		return
	}
	defer func() { <-a.slots }()
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, a.cfg.CGITimeout, errTimeout)
	defer cancelTimeout()
	defer context.AfterFunc(a.closing, func() { cancel(errClosing) })()

	log := a.log.With("app", "cgi/"+name)
	stderr := &lineLog{log: log}
	tag := newTag()
	h := &cgi.Handler{
		Path:   path,
		Root:   CGIPrefix + name,
		Dir:    a.cfg.CGIDir,
		Env:    []string{"MURE_NODE=" + a.cfg.NodeID, runEnv + "=" + tag},
		Logger: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		Stderr: stderr,
	}
	if a.nice != "" {
		// nice(1) runs the program; the program still sees itself as the
		// script (SCRIPT_FILENAME: cgi.Handler keeps the last value given).
		h.Args = []string{"-n", strconv.Itoa(a.cfg.CGINice), path}
		h.Path = a.nice
		h.Env = append(h.Env, "SCRIPT_FILENAME="+path)
	}
	req := r.WithContext(ctx)
	if a.cfg.Token != "" {
		req.Header = r.Header.Clone()
		stripToken(req.Header, a.cfg.Token)
	}
	g := &guard{ResponseWriter: w}
	done := make(chan struct{})
	stopped := make(chan bool, 1)
	go func() { stopped <- a.watch(ctx, done, tag) }()
	h.ServeHTTP(g, req)
	close(done)
	killed := <-stopped
	stderr.Close() // cgi.Handler has waited for the program and its stderr
	a.conclude(w, r, name, g.sent, killed, context.Cause(ctx), log)
}

// conclude answers for a run whose program gave no answer, or cuts the
// answer of one killed while answering.
func (a *Apps) conclude(w http.ResponseWriter, r *http.Request, name string, sent, killed bool, cause error, log *slog.Logger) {
	switch {
	case !killed:
	case errors.Is(cause, errTimeout), errors.Is(cause, errClosing):
		log.Warn("CGI program stopped", "reason", cause)
	default:
		log.Info("CGI program stopped", "reason", "the client went away")
	}
	switch {
	case sent && killed && r.Context().Err() == nil:
		// The answer began and was cut: do not let it look complete.
		panic(http.ErrAbortHandler)
	case sent:
	case killed && errors.Is(cause, errTimeout):
		api.Error(w, http.StatusGatewayTimeout, api.CodeGatewayTimeout,
			fmt.Sprintf("CGI program %q ran longer than %s (--cgi-timeout) and was stopped", name, a.cfg.CGITimeout))
	case killed && errors.Is(cause, errClosing):
		api.Unavailable(w, 1, api.CodeUnavailable, fmt.Sprintf("the node is stopping; CGI program %q was stopped", name))
	case r.Context().Err() != nil:
		// The client left: nobody to answer.
	default:
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, fmt.Sprintf("CGI program %q gave no valid CGI answer "+
			"(header lines with Content-Type or Status, a blank line, the body); the node's log has its errors", name))
	}
}

// watch waits for the run to end (done) or its context to; in the
// second case it has the reaper kill the run's processes until the run
// ends, and reports whether any were killed.
func (a *Apps) watch(ctx context.Context, done <-chan struct{}, tag string) bool {
	select {
	case <-done:
		return false
	case <-ctx.Done():
	}
	select {
	case <-done:
		return false // finished just as the context ended
	default:
	}
	killed := a.reaper.stop(tag)
	<-done
	a.reaper.forget(tag)
	return killed.Load() > 0
}

// newTag returns a random marker for one run.
func newTag() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// guard passes the program's answer through, but holds back the bare 500
// with which cgi.Handler reports its own failures (no body, no
// Content-Type), so that run can answer with the JSON envelope instead.
type guard struct {
	http.ResponseWriter
	held int  // status held back
	sent bool // the program's answer has begun
}

func (g *guard) WriteHeader(code int) {
	if !g.sent && code == http.StatusInternalServerError && g.Header().Get("Content-Type") == "" {
		g.held = code
		return
	}
	g.sent = true
	g.ResponseWriter.WriteHeader(code)
}

func (g *guard) Write(b []byte) (int, error) {
	if !g.sent && g.held != 0 {
		g.ResponseWriter.WriteHeader(g.held)
	}
	g.sent = true
	return g.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer (http.ResponseController).
func (g *guard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// lineLog writes a program's stderr to the log, a record per line. It
// keeps at most maxStderrLines lines of one run, each cut at
// maxStderrLine bytes, so a chatty program cannot flood the log. Only
// exec's copying goroutine writes; Close comes after it is done.
type lineLog struct {
	log     *slog.Logger
	buf     []byte
	lines   int
	dropped int
}

const (
	maxStderrLines = 100
	maxStderrLine  = 4096
)

func (l *lineLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxStderrLine {
			return len(p), nil
		}
		if i < 0 || i > maxStderrLine {
			i = maxStderrLine
		}
		l.emit(l.buf[:i])
		if i < len(l.buf) && l.buf[i] == '\n' {
			i++
		}
		l.buf = l.buf[i:]
	}
}

func (l *lineLog) emit(line []byte) {
	if l.lines >= maxStderrLines {
		l.dropped++
		return
	}
	l.lines++
	l.log.Warn("CGI stderr", "line", strings.TrimRight(string(line), "\r"))
}

// Close logs the last unfinished line and how many lines were dropped.
func (l *lineLog) Close() error {
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
	if l.dropped > 0 {
		l.log.Warn("CGI stderr lines dropped", "lines", l.dropped)
	}
	return nil
}

// acquire waits for one of the CGIMaxRunning slots: beyond them requests
// queue here instead of starting programs that would only share the same
// CPU more thinly (and starve the node itself). A request that waits
// longer than CGITimeout is answered 503.
func (a *Apps) acquire(w http.ResponseWriter, r *http.Request) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	a.m.cgiWaiting.Inc()
	defer a.m.cgiWaiting.Dec()
	t := time.NewTimer(a.cfg.CGITimeout)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return true
	case <-t.C:
		api.Unavailable(w, 1, api.CodeUnavailable, fmt.Sprintf("all %d CGI slots of this node stayed busy for %s; retry later", cap(a.slots), a.cfg.CGITimeout))
	case <-r.Context().Done():
	case <-a.closing.Done():
		api.Unavailable(w, 1, api.CodeUnavailable, "the node is stopping")
	}
	return false
}
