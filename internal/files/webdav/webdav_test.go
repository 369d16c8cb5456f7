package webdav_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const lockBody = `<?xml version="1.0" encoding="utf-8"?>
<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>alice</D:owner></D:lockinfo>`

// A file written over S3 is read over WebDAV through every node, one
// written over WebDAV is read over S3 and the native API, and folders
// made, listed, moved and removed over WebDAV on one node are seen on the
// others.
func TestWebDAVThroughEveryNode(t *testing.T) {
	c, key := davCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d0, d1, d2 := davOf(t, c, 0, "alice", alicePassword), davOf(t, c, 1, "alice", alicePassword), davOf(t, c, 2, key.ID, key.Secret)
	d0.want(http.StatusCreated, "MKCOL", "/photos/", "")

	s3c := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + c.Nodes[0].S3Addr()), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
	body := strings.Repeat("from s3 ", 5000)
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("s3 é.txt"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	for i, d := range []*dav{d0, d1, d2} {
		if got := d.want(http.StatusOK, http.MethodGet, "/photos/s3%20%C3%A9.txt", ""); got != body {
			t.Fatalf("node %d: GET over WebDAV: %d bytes, want %d", i, len(got), len(body))
		}
		_, got, _ := d.do(http.MethodGet, "/photos/s3%20%C3%A9.txt", "", "Range", "bytes=8-14")
		if got != body[8:15] {
			t.Fatalf("node %d: range %q, want %q", i, got, body[8:15])
		}
	}

	d2.want(http.StatusCreated, http.MethodPut, "/photos/dav.txt", "from webdav", "Content-Type", "text/x-mure")
	if _, _, h := d0.do(http.MethodGet, "/photos/dav.txt", ""); h.Get("Content-Type") != "text/x-mure" {
		t.Fatalf("GET answers Content-Type %q, the PUT gave text/x-mure", h.Get("Content-Type"))
	}
	// A dead property set through one node is read through another.
	d1.want(http.StatusMultiStatus, "PROPPATCH", "/photos/dav.txt", `<?xml version="1.0"?>
<D:propertyupdate xmlns:D="DAV:" xmlns:Z="http://example.com/ns/"><D:set><D:prop><Z:color>blue</Z:color></D:prop></D:set></D:propertyupdate>`)
	props := d0.want(http.StatusMultiStatus, "PROPFIND", "/photos/dav.txt", `<?xml version="1.0"?>
<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, "Depth", "0")
	if !strings.Contains(props, "blue</color>") && !strings.Contains(props, ">blue<") {
		t.Fatalf("PROPFIND through another node lacks the dead property:\n%s", props)
	}
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("dav.txt")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "from webdav" {
		t.Fatalf("GET over S3 of a file put over WebDAV: %q", got)
	}

	d1.want(http.StatusCreated, "MKCOL", "/photos/album", "")
	list := d0.want(http.StatusMultiStatus, "PROPFIND", "/photos/", "", "Depth", "1")
	for _, want := range []string{"/photos/album/", "/photos/dav.txt", "/photos/s3%20%C3%A9.txt"} {
		if !strings.Contains(list, "<D:href>"+want+"</D:href>") {
			t.Fatalf("PROPFIND /photos/ lacks %s:\n%s", want, list)
		}
	}
	for _, hide := range []string{".mure-dir", ".s3bucket"} {
		if strings.Contains(list, hide) {
			t.Fatalf("PROPFIND /photos/ shows %s:\n%s", hide, list)
		}
	}
	d0.want(http.StatusCreated, "MOVE", "/photos/dav.txt", "", "Destination", d0.base+"/photos/album/moved.txt")
	d2.want(http.StatusNotFound, http.MethodGet, "/photos/dav.txt", "")
	if got := d2.want(http.StatusOK, http.MethodGet, "/photos/album/moved.txt", ""); got != "from webdav" {
		t.Fatalf("GET after MOVE: %q", got)
	}
	if props := d2.want(http.StatusMultiStatus, "PROPFIND", "/photos/album/moved.txt", "", "Depth", "0"); !strings.Contains(props, ">blue<") {
		t.Fatalf("the dead property did not move with the file:\n%s", props)
	}
	d1.want(http.StatusCreated, "COPY", "/photos/album/", "", "Destination", d1.base+"/photos/copy/")
	d0.want(http.StatusOK, http.MethodGet, "/photos/copy/moved.txt", "")
	d0.want(http.StatusNoContent, http.MethodDelete, "/photos/album/", "")
	d1.want(http.StatusNotFound, "PROPFIND", "/photos/album/", "", "Depth", "0")
	d1.want(http.StatusMultiStatus, "PROPFIND", "/photos/copy/", "", "Depth", "0")
}

// Credentials: Basic with a password or an access key, a bearer token;
// the grants decide, also for a COPY's destination.
func TestWebDAVAuth(t *testing.T) {
	c, key := davCluster(t, 1)
	alice := davOf(t, c, 0, "alice", alicePassword)
	st, _, hdr := davOf(t, c, 0, "", "").do("PROPFIND", "/photos/", "", "Depth", "0")
	if st != http.StatusUnauthorized || !strings.Contains(hdr.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credential: %d, WWW-Authenticate %q; want 401 asking for Basic", st, hdr.Get("WWW-Authenticate"))
	}
	davOf(t, c, 0, "alice", "wrong").want(http.StatusUnauthorized, "PROPFIND", "/photos/", "", "Depth", "0")
	alice.want(http.StatusCreated, "MKCOL", "/photos", "")
	alice.want(http.StatusCreated, http.MethodPut, "/photos/a.txt", "a")
	alice.want(http.StatusForbidden, http.MethodPut, "/other/a.txt", "a")
	alice.want(http.StatusForbidden, "MKCOL", "/other", "")
	if got := davOf(t, c, 0, key.ID, key.Secret).want(http.StatusOK, http.MethodGet, "/photos/a.txt", ""); got != "a" {
		t.Fatalf("GET with the access key: %q", got)
	}
	admin := &dav{t: t, base: alice.base, bearer: c.Token()}
	admin.want(http.StatusCreated, "MKCOL", "/shared", "")
	alice.want(http.StatusForbidden, "COPY", "/photos/a.txt", "", "Destination", alice.base+"/shared/a.txt")
	alice.want(http.StatusForbidden, "MOVE", "/photos/a.txt", "", "Destination", alice.base+"/shared/a.txt")
	admin.want(http.StatusCreated, "COPY", "/photos/a.txt", "", "Destination", alice.base+"/shared/a.txt")
	alice.want(http.StatusOK, http.MethodGet, "/shared/a.txt", "")
	alice.want(http.StatusForbidden, http.MethodDelete, "/shared/a.txt", "")
	// The root lists only what alice may read.
	root := admin.want(http.StatusMultiStatus, "PROPFIND", "/", "", "Depth", "1")
	if !strings.Contains(root, "/other/") && !strings.Contains(root, "/shared/") {
		t.Fatalf("the admin's root listing lacks /shared/:\n%s", root)
	}
}

// A lock taken through one node holds on another; its token opens it
// there, and an UNLOCK through a third node ends it.
func TestWebDAVLocksAcrossNodes(t *testing.T) {
	c, _ := davCluster(t, 3)
	d0, d1, d2 := davOf(t, c, 0, "alice", alicePassword), davOf(t, c, 1, "alice", alicePassword), davOf(t, c, 2, "alice", alicePassword)
	d0.want(http.StatusCreated, "MKCOL", "/photos", "")
	st, b, hdr := d0.do("LOCK", "/photos/l.txt", lockBody, "Timeout", "Second-60")
	tok := strings.Trim(hdr.Get("Lock-Token"), "<>")
	if st != http.StatusCreated || !strings.HasPrefix(tok, "opaquelocktoken:") {
		t.Fatalf("LOCK: %d, Lock-Token %q: %s", st, tok, b)
	}
	d1.want(http.StatusLocked, http.MethodPut, "/photos/l.txt", "no token")
	d2.want(http.StatusLocked, http.MethodDelete, "/photos/l.txt", "")
	d1.want(http.StatusLocked, "LOCK", "/photos/l.txt", lockBody)
	d1.want(http.StatusLocked, "LOCK", "/photos/", lockBody, "Depth", "infinity")
	d1.want(http.StatusCreated, http.MethodPut, "/photos/l.txt", "with token", "If", "(<"+tok+">)")
	d2.want(http.StatusNoContent, "UNLOCK", "/photos/l.txt", "", "Lock-Token", "<"+tok+">")
	d1.want(http.StatusCreated, http.MethodPut, "/photos/l.txt", "unlocked")
	if got := d2.want(http.StatusOK, http.MethodGet, "/photos/l.txt", ""); got != "unlocked" {
		t.Fatalf("GET: %q", got)
	}
	// A MOVE of a locked file with its token, to a place no lock covers,
	// needs no other token (davfs2 moves the files it has locked).
	st, b, hdr = d0.do("LOCK", "/photos/n.txt", lockBody, "Timeout", "Second-60")
	ntok := strings.Trim(hdr.Get("Lock-Token"), "<>")
	if st != http.StatusCreated {
		t.Fatalf("LOCK n.txt: %d: %s", st, b)
	}
	d1.want(http.StatusCreated, "MOVE", "/photos/n.txt", "", "Destination", d1.base+"/photos/moved-n.txt", "If", "(<"+ntok+">)")
	d2.want(http.StatusNoContent, "UNLOCK", "/photos/n.txt", "", "Lock-Token", "<"+ntok+">")
	// A lock expires: a one-second lock no longer blocks after it.
	st, _, _ = d0.do("LOCK", "/photos/l.txt", lockBody, "Timeout", "Second-1")
	if st != http.StatusOK && st != http.StatusCreated {
		t.Fatalf("second LOCK: %d", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, _ := d2.do(http.MethodPut, "/photos/l.txt", "after expiry")
		if st == http.StatusCreated || st == http.StatusNoContent {
			break
		}
		if st != http.StatusLocked || time.Now().After(deadline) {
			t.Fatalf("PUT after the lock's timeout: %d", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The rule for keys that are not a tree, and writes that must not land.
func TestWebDAVFolders(t *testing.T) {
	c, _ := davCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := c.Client(0)
	for _, p := range []string{"t/a", "t/a/b"} {
		if _, err := cl.Put(ctx, p, strings.NewReader("native "+p), nil); err != nil {
			t.Fatal(err)
		}
	}
	admin := &dav{t: t, base: "http://" + c.Nodes[0].WebDAVAddr(), bearer: c.Token()}
	list := admin.want(http.StatusMultiStatus, "PROPFIND", "/t/", "", "Depth", "1")
	if strings.Count(list, "<D:href>/t/a") != 1 || !strings.Contains(list, "<D:href>/t/a/</D:href>") {
		t.Fatalf("a is both a file and a folder: the folder must win, once:\n%s", list)
	}
	admin.want(http.StatusMethodNotAllowed, http.MethodGet, "/t/a", "")
	if got := admin.want(http.StatusOK, http.MethodGet, "/t/a/b", ""); got != "native t/a/b" {
		t.Fatalf("GET /t/a/b: %q", got)
	}
	admin.want(http.StatusConflict, http.MethodPut, "/t/a/b/c", "below a file")
	admin.want(http.StatusConflict, http.MethodPut, "/t/missing/c", "no parent")
	admin.want(http.StatusMethodNotAllowed, http.MethodPut, "/t/a", "over a folder")
	admin.want(http.StatusMethodNotAllowed, "MKCOL", "/t/a", "")
	admin.want(http.StatusNoContent, http.MethodDelete, "/t/a", "")
	for _, p := range []string{"t/a", "t/a/b"} {
		if _, err := cl.Stat(ctx, p); err == nil {
			t.Fatalf("%s survived the DELETE of its folder", p)
		}
	}

	// A body that ends before its Content-Length leaves nothing.
	conn, err := net.Dial("tcp", c.Nodes[0].WebDAVAddr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /t/short HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\nonly ten b", c.Token())
	_ = conn.(*net.TCPConn).CloseWrite()
	_, _ = io.ReadAll(conn)
	conn.Close()
	admin.want(http.StatusNotFound, http.MethodGet, "/t/short", "")
	if _, err := cl.Stat(ctx, "t/short"); err == nil {
		t.Fatal("a PUT cut short became a file")
	}
}
