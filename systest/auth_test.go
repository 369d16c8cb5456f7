package systest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

const staticAdmin = "static-admin-token"

// secured is a cluster with authentication on, the deprecated static
// admin token to bootstrap users, cheap password hashes and pub/ open to
// anonymous reads.
func secured(t *testing.T, n int, more ...func(cfg *node.Config)) *testcluster.Cluster {
	return testcluster.Start(t, n, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Token = staticAdmin
		cfg.Auth = node.AuthConfig{HashParams: auth.TestHashParams(), MetricsToken: "scrape-me",
			AnonymousRead: []auth.Grant{{Prefix: "pub/"}}}
		for _, f := range more {
			f(cfg)
		}
	}})
}

// answer is an HTTP answer: its status and the JSON error code, if any.
type answer struct {
	status int
	code   string
	body   map[string]any
}

// bare sends requests as they are: no credential added (unlike
// http.DefaultClient in this package, see TestMain).
var bare = &http.Client{Transport: http.DefaultTransport}

func call(t *testing.T, addr, method, path, authz, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if body != "" && strings.HasPrefix(path, "/auth/") {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(b, &a.body)
		a.code, _ = a.body["code"].(string)
	}
	return a
}

func bearer(tok string) string { return "Bearer " + tok }

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// mustCall calls and fails the test unless the status is want.
func mustCall(t *testing.T, addr, method, path, authz, body string, want int) answer {
	t.Helper()
	a := call(t, addr, method, path, authz, body)
	if a.status != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, a.status, a.body, want)
	}
	return a
}

// newToken makes a token for user through node addr, as the static admin.
func newToken(t *testing.T, addr, user, name, ttl string) string {
	t.Helper()
	a := mustCall(t, addr, "POST", "/auth/tokens", bearer(staticAdmin),
		`{"name":"`+name+`","user":"`+user+`","ttl":"`+ttl+`"}`, http.StatusCreated)
	tok, _ := a.body["token"].(string)
	if _, err := auth.ParseToken(tok); err != nil {
		t.Fatalf("new token %q: %v", tok, err)
	}
	return tok
}

// Every role against every kind of endpoint: allowed, 401 (no or a wrong
// credential) or 403 (known but not allowed), with the JSON error code.
func TestRoleByEndpoint(t *testing.T) {
	c := secured(t, 1, func(cfg *node.Config) { cfg.Auth.LoginBurst, cfg.DebugFaults = 1000, true })
	addr := c.HTTPAddr(0)
	adm := bearer(staticAdmin)
	mustCall(t, addr, "POST", "/auth/users", adm, `{"name":"root","password":"root-pass-1","admin":true}`, http.StatusCreated)
	mustCall(t, addr, "POST", "/auth/users", adm, `{"name":"alice","password":"alice-pass-1","grants":["rw:docs/","ro:pub/"]}`, http.StatusCreated)
	mustCall(t, addr, "POST", "/auth/users", adm, `{"name":"bob","password":"bob-pass-12"}`, http.StatusCreated)
	mustCall(t, addr, "PUT", "/files/pub/x", adm, "public", http.StatusCreated)
	mustCall(t, addr, "PUT", "/files/docs/a", adm, "doc", http.StatusCreated)
	roles := map[string]string{
		"none":       "",
		"bad token":  bearer(auth.NewToken()),
		"bad scheme": "Digest x",
		"wrong pw":   basic("alice", "wrong-pass"),
		"root":       bearer(newToken(t, addr, "root", "t", "")),
		"root pw":    basic("root", "root-pass-1"),
		"alice":      bearer(newToken(t, addr, "alice", "t", "")),
		"bob":        bearer(newToken(t, addr, "bob", "t", "")),
		"scrape":     bearer("scrape-me"),
	}
	type want struct {
		status int
		code   string
	}
	ok := func(s int) want { return want{s, ""} }
	u401, f403 := want{401, "unauthorized"}, want{403, "forbidden"}
	endpoints := []struct {
		method, path, body string
		by                 map[string]want // role → answer; missing roles: 401 for no or a wrong credential, else 403
	}{
		{"GET", "/healthz", "", map[string]want{"none": ok(200), "bad token": ok(200), "bad scheme": ok(200), "wrong pw": ok(200), "root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200), "scrape": ok(200)}},
		{"GET", "/files/pub/x", "", map[string]want{"none": ok(200), "root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"GET", "/files/docs/a", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"PUT", "/files/docs/b", "x", map[string]want{"root": ok(201), "root pw": ok(200), "alice": ok(200)}},
		{"PUT", "/files/pub/y", "x", map[string]want{"root": ok(201), "root pw": ok(200)}},
		{"DELETE", "/files/docs/a", "", map[string]want{"root": ok(204), "root pw": ok(404), "alice": ok(404)}},
		{"GET", "/list?prefix=docs/", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"GET", "/status", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200)}},
		{"GET", "/auth/whoami", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200)}},
		{"PUT", "/config/replication", "2", map[string]want{"root": ok(200), "root pw": ok(200)}},
		{"DELETE", "/nodes/nosuchnode", "", map[string]want{"root": ok(409), "root pw": ok(409)}},
		{"GET", "/auth/users", "", map[string]want{"root": ok(200), "root pw": ok(200)}},
		{"POST", "/auth/users", `{"name":"carol"}`, map[string]want{"root": ok(201), "root pw": ok(409)}},
		{"GET", "/metrics", "", map[string]want{"root": ok(200), "root pw": ok(200), "scrape": ok(200)}},
		{"GET", "/readyz", "", map[string]want{"none": ok(200), "bad token": ok(200), "bad scheme": ok(200), "wrong pw": ok(200), "root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200), "scrape": ok(200)}},
		{"GET", "/config", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200)}},
		{"GET", "/status/files/pub/x", "", map[string]want{"none": ok(200), "root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"GET", "/status/files/docs/b", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"GET", "/list?prefix=pub/", "", map[string]want{"none": ok(200), "root": ok(200), "root pw": ok(200), "alice": ok(200)}},
		{"POST", "/debug/isolate?on=0", "", map[string]want{"root": ok(200), "root pw": ok(200)}},
		// no --proxy on this node: admins reach the (absent) route
		{"POST", "/cache/purge?url=/x", "", map[string]want{"root": ok(404), "root pw": ok(404)}},
		{"GET", "/auth/tokens", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200)}},
		{"GET", "/auth/tokens?user=root", "", map[string]want{"root": ok(200), "root pw": ok(200)}},
		{"GET", "/auth/keys?user=root", "", map[string]want{"root": ok(200), "root pw": ok(200)}},
		{"DELETE", "/auth/tokens/root/nosuch", "", map[string]want{"root": ok(404), "root pw": ok(404)}},
		{"GET", "/auth/keys", "", map[string]want{"root": ok(200), "root pw": ok(200), "alice": ok(200), "bob": ok(200)}},
		{"POST", "/auth/keys", `{}`, map[string]want{"root": ok(201), "root pw": ok(201), "alice": ok(201), "bob": ok(201)}},
		{"PATCH", "/auth/users/bob", `{"grants":[]}`, map[string]want{"root": ok(200), "root pw": ok(200)}},
		{"DELETE", "/auth/users/nosuch", "", map[string]want{"root": ok(404), "root pw": ok(404)}},
	}
	for _, ep := range endpoints {
		for _, role := range []string{"none", "bad token", "bad scheme", "wrong pw", "root", "root pw", "alice", "bob", "scrape"} {
			w, found := ep.by[role]
			if !found {
				w = f403
				if role == "none" || role == "bad token" || role == "bad scheme" || role == "wrong pw" || role == "scrape" {
					w = u401
				}
			}
			t.Run(role+" "+ep.method+" "+ep.path, func(t *testing.T) {
				a := call(t, addr, ep.method, ep.path, roles[role], ep.body)
				if a.status != w.status || w.code != "" && a.code != w.code {
					t.Fatalf("%d %q %v, want %d %q", a.status, a.code, a.body, w.status, w.code)
				}
				if a.status >= 400 {
					if msg, _ := a.body["error"].(string); len(msg) < 20 {
						t.Fatalf("error %q does not say what is missing", msg)
					}
				}
			})
		}
	}
}

// A revoked token is refused by every node, including one that learns of
// the revocation from a snapshot; an expired one stops working everywhere.
func TestTokenRevocationAcrossNodes(t *testing.T) {
	c := secured(t, 3, func(cfg *node.Config) { cfg.Timing.SnapshotThreshold, cfg.Timing.SnapshotTrailing = 32, 8 })
	mustCall(t, c.HTTPAddr(0), "POST", "/auth/users", bearer(staticAdmin), `{"name":"alice","grants":["rw:"]}`, http.StatusCreated)
	tok := newToken(t, c.HTTPAddr(0), "alice", "laptop", "")
	short := newToken(t, c.HTTPAddr(1), "alice", "short", "2s")
	for i := range 3 {
		testcluster.WaitFor(t, 5*time.Second, "node sees the token", func() bool {
			return call(t, c.HTTPAddr(i), "GET", "/auth/whoami", bearer(tok), "").status == 200
		})
	}
	mustCall(t, c.HTTPAddr(1), "DELETE", "/auth/tokens/alice/laptop", bearer(staticAdmin), "", http.StatusOK)
	for i := range 3 {
		testcluster.WaitFor(t, 5*time.Second, "node refuses the revoked token", func() bool {
			return call(t, c.HTTPAddr(i), "GET", "/auth/whoami", bearer(tok), "").status == 401
		})
	}
	testcluster.WaitFor(t, 10*time.Second, "the expired token refused everywhere", func() bool {
		for i := range 3 {
			if call(t, c.HTTPAddr(i), "GET", "/auth/whoami", bearer(short), "").status != 401 {
				return false
			}
		}
		return true
	})

	// Push the log past the snapshot threshold, then add a node: it is
	// brought up to date by a snapshot install, and refuses the token.
	for i := range 40 {
		mustCall(t, c.HTTPAddr(0), "PUT", "/files/f/"+string(rune('a'+i%26))+string(rune('a'+i/26)), bearer(staticAdmin), "x", http.StatusCreated)
	}
	testcluster.WaitFor(t, 20*time.Second, "a snapshot on node 0", func() bool {
		return c.Nodes[0].Cluster().RaftStats()["last_snapshot_index"] != "0"
	})
	nd := c.AddWith(testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Token = staticAdmin
		cfg.Auth = node.AuthConfig{HashParams: auth.TestHashParams()}
	}})
	if c.Nodes[nd.Index].Cluster().RaftStats()["last_snapshot_index"] == "0" {
		t.Fatal("the new node was not brought up by a snapshot; the test does not test what it says")
	}
	if got := call(t, c.HTTPAddr(nd.Index), "GET", "/auth/whoami", bearer(tok), ""); got.status != 401 {
		t.Fatalf("the node restored from a snapshot answers the revoked token with %d", got.status)
	}
	c.Restart(0)
	c.WaitReady(0)
	if got := call(t, c.HTTPAddr(0), "GET", "/auth/whoami", bearer(tok), ""); got.status != 401 {
		t.Fatalf("node 0 restarted from its snapshot answers the revoked token with %d", got.status)
	}
}

// Failed logins are limited per address and per user: after the burst,
// even the right password waits (429, Retry-After) while a token works;
// admin actions and failed logins are in the audit log.
func TestLoginRateLimitAndAudit(t *testing.T) {
	c := secured(t, 1)
	addr := c.HTTPAddr(0)
	mustCall(t, addr, "POST", "/auth/users", bearer(staticAdmin), `{"name":"alice","password":"alice-pass-1","grants":["rw:"]}`, http.StatusCreated)
	tok := newToken(t, addr, "alice", "t", "")
	for range 10 {
		mustCall(t, addr, "GET", "/auth/whoami", basic("alice", "guess-guess"), "", http.StatusUnauthorized)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/auth/whoami", nil)
	req.Header.Set("Authorization", basic("alice", "alice-pass-1"))
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after 10 failures: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	mustCall(t, addr, "GET", "/auth/whoami", bearer(tok), "", http.StatusOK)

	b, err := os.ReadFile(filepath.Join(c.Nodes[0].Dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"msg":"admin action","user":"admin","via":"static_token"`, `"path":"/auth/users","status":201`, `"msg":"login failed","user":"alice"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("audit log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "alice-pass-1") || strings.Contains(string(b), tok) {
		t.Error("a secret is in the audit log")
	}
}

// No secret (password, token, access key secret) is in clear anywhere in
// a node's data directory (raft log, snapshots, audit log) or in /status,
// on any node.
func TestNoSecretOnDiskOrStatus(t *testing.T) {
	c := secured(t, 3, func(cfg *node.Config) {
		cfg.Timing.SnapshotThreshold, cfg.Timing.SnapshotTrailing = 32, 8
		cfg.Auth.LoginBurst = 1000 // the polls below may fail a few times
	})
	addr := c.HTTPAddr(1)
	const pw = "alice-secret-password"
	mustCall(t, addr, "POST", "/auth/users", bearer(staticAdmin), `{"name":"alice","password":"`+pw+`","grants":["rw:"]}`, http.StatusCreated)
	tok := newToken(t, addr, "alice", "t", "")
	k := mustCall(t, addr, "POST", "/auth/keys", basic("alice", pw), `{}`, http.StatusCreated)
	id, _ := k.body["id"].(string)
	secret, _ := k.body["secret"].(string)
	if len(secret) < 40 {
		t.Fatalf("access key answer %v", k.body)
	}
	testcluster.WaitFor(t, 5*time.Second, "another node takes the access key", func() bool {
		return call(t, c.HTTPAddr(2), "GET", "/auth/whoami", basic(id, secret), "").status == http.StatusOK
	})
	for i := range 40 { // past the snapshot threshold
		mustCall(t, addr, "PUT", "/files/f/"+string(rune('a'+i%26))+string(rune('a'+i/26)), bearer(tok), "x", http.StatusCreated)
	}
	testcluster.WaitFor(t, 20*time.Second, "a snapshot on node 0", func() bool {
		return c.Nodes[0].Cluster().RaftStats()["last_snapshot_index"] != "0"
	})
	secrets := map[string]string{"password": pw, "token": tok, "access key secret": secret}
	for i, nd := range c.Nodes {
		st := call(t, c.HTTPAddr(i), "GET", "/status", bearer(staticAdmin), "")
		b, _ := json.Marshal(st.body)
		var found []string
		sawKeyID := false
		_ = filepath.Walk(nd.Dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || strings.Contains(p, string(filepath.Separator)+"store"+string(filepath.Separator)) {
				return nil // blobs hold file contents, not records
			}
			data, _ := os.ReadFile(p)
			sawKeyID = sawKeyID || strings.Contains(string(data), id)
			for what, s := range secrets {
				if strings.Contains(string(data), s) {
					found = append(found, what+" in "+p)
				}
			}
			return nil
		})
		for what, s := range secrets {
			if strings.Contains(string(b), s) {
				found = append(found, what+" in /status")
			}
		}
		if len(found) > 0 {
			t.Errorf("node %d: secrets in clear: %v", i, found)
		}
		if !sawKeyID {
			t.Errorf("node %d: the access key's ID is nowhere in its data directory: the test looks in the wrong place", i)
		}
	}
}

// A cluster made without authentication (as by the binary before users:
// no records, no admin.token) keeps its files after the upgrade, and each
// node makes its admin credential at its first start with authentication.
func TestUpgradeToAuthentication(t *testing.T) {
	c := testcluster.Start(t, 2, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.Auth.Open = true }})
	mustCall(t, c.HTTPAddr(0), "PUT", "/files/old/doc", "", "from before", http.StatusCreated)
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(c.Nodes[i].Dir, node.AdminTokenFile)); !os.IsNotExist(err) {
			t.Fatalf("node %d has an admin credential with authentication off: %v", i, err)
		}
	}
	for i := range 2 {
		c.RestartWith(i, func(cfg *node.Config) { cfg.Auth.Open = false })
		c.WaitReady(i)
		if !c.Nodes[i].NewAdmin {
			t.Fatalf("node %d did not report a new admin credential (serve prints where it is)", i)
		}
	}
	for i := range 2 {
		b, err := os.ReadFile(filepath.Join(c.Nodes[i].Dir, node.AdminTokenFile))
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.TrimSpace(string(b))
		mustCall(t, c.HTTPAddr(1-i), "GET", "/files/old/doc", "", "", http.StatusUnauthorized)
		testcluster.WaitFor(t, 5*time.Second, "the other node takes node's admin credential", func() bool {
			return call(t, c.HTTPAddr(1-i), "GET", "/files/old/doc", bearer(tok), "").status == http.StatusOK
		})
	}
}

// Rotating a node's admin credential: delete DATA/admin.token and restart
// the node; the old token is refused everywhere, the new one works.
func TestAdminCredentialRotation(t *testing.T) {
	c := testcluster.Start(t, 2)
	path := filepath.Join(c.Nodes[1].Dir, node.AdminTokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSpace(string(b))
	mustCall(t, c.HTTPAddr(0), "GET", "/auth/whoami", bearer(old), "", http.StatusOK)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c.Restart(1)
	c.WaitReady(1)
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh := strings.TrimSpace(string(b))
	if fresh == old || !c.Nodes[1].NewAdmin {
		t.Fatal("the restart did not make a new admin credential")
	}
	for i := range 2 {
		testcluster.WaitFor(t, 5*time.Second, "the old admin token refused, the new one taken", func() bool {
			return call(t, c.HTTPAddr(i), "GET", "/auth/whoami", bearer(old), "").status == http.StatusUnauthorized &&
				call(t, c.HTTPAddr(i), "GET", "/auth/whoami", bearer(fresh), "").status == http.StatusOK
		})
	}
}
