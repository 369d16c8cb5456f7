package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A renewal over a key file readable by others leaves it 0600.
func TestIssueKeyMode(t *testing.T) {
	dir := t.TempDir()
	if err := InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := os.WriteFile(key, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Issue(dir, []string{"127.0.0.1"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{key, filepath.Join(dir, CAKey)} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	if _, err := NewHolder(crt, key); err != nil {
		t.Fatal(err)
	}
}

// TestCAPEM: a certificate from mure ca issue carries its CA after it; the
// holder gives that CA (and nothing from a chain without one), and a
// client trusting the PEM itself (LoadPool of the text, as MURE_CA holds
// it in a session) verifies the server.
func TestCAPEM(t *testing.T) {
	dir := t.TempDir()
	if err := InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := Issue(dir, []string{"127.0.0.1"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	h, err := NewHolder(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CACert))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.CAPEM(); !bytes.Equal(got, caPEM) {
		t.Fatalf("CAPEM:\n%s\nwant the CA's certificate:\n%s", got, caPEM)
	}
	pool, err := LoadPool(string(h.CAPEM()))
	if err != nil {
		t.Fatal(err)
	}
	dialTrusting(t, h, pool, "a client trusting CAPEM")

	// The leaf alone (a chain without its root): nothing to give.
	chain, err := os.ReadFile(crt)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := pem.Decode(chain)
	if err := os.WriteFile(crt, pem.EncodeToMemory(leaf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := h.CAPEM(); got != nil {
		t.Fatalf("CAPEM of a chain without a root: %s", got)
	}
	if _, err := LoadPool("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n"); err == nil {
		t.Fatal("LoadPool took a PEM without a certificate")
	}
}

// TestCAPEMIntermediate: a chain of a private CA that ends with an
// intermediate, not its root: the holder gives the intermediate, and a
// client trusting that alone (as mure in a session does with MURE_CA)
// verifies the server.
func TestCAPEMIntermediate(t *testing.T) {
	rootDir, interDir := t.TempDir(), t.TempDir()
	if err := InitCA(rootDir, "test root"); err != nil {
		t.Fatal(err)
	}
	root, err := tls.LoadX509KeyPair(filepath.Join(rootDir, CACert), filepath.Join(rootDir, CAKey))
	if err != nil {
		t.Fatal(err)
	}
	rootCert, err := x509.ParseCertificate(root.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// The intermediate, as a CA directory mure ca issue can use.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "test intermediate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, rootCert, &key.PublicKey, root.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(filepath.Join(interDir, CACert), filepath.Join(interDir, CAKey), der, key); err != nil {
		t.Fatal(err)
	}
	crt, keyFile := filepath.Join(interDir, "n.crt"), filepath.Join(interDir, "n.key")
	if err := Issue(interDir, []string{"127.0.0.1"}, 1, crt, keyFile); err != nil { // the leaf, then the intermediate
		t.Fatal(err)
	}
	h, err := NewHolder(crt, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	want := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if got := h.CAPEM(); !bytes.Equal(got, want) {
		t.Fatalf("CAPEM:\n%s\nwant the intermediate:\n%s", got, want)
	}
	pool, err := LoadPool(string(h.CAPEM()))
	if err != nil {
		t.Fatal(err)
	}
	dialTrusting(t, h, pool, "a client trusting the intermediate alone")
}

// dialTrusting fails t unless a TLS client trusting pool alone completes
// a handshake with a server holding h's chain.
func dialTrusting(t *testing.T, h *Holder, pool *x509.CertPool, who string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", h.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	conn.Close()
}
