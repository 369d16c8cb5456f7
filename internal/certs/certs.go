// Package certs makes the TLS material of mure's client ports: a cluster
// CA (mure ca init) that issues node certificates (mure ca issue), and a
// certificate holder a node reloads on SIGHUP. Standard library only:
// ECDSA P-256 keys, X.509 v3. See docs/security.md.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Files of a CA directory.
const (
	CACert = "ca.crt"
	CAKey  = "ca.key"
)

// ErrExists: the CA directory holds a CA already.
var ErrExists = errors.New("certs: a CA exists already")

// InitCA creates a CA (certificate valid 10 years, key mode 0600) in dir.
func InitCA(dir, name string) error {
	if _, err := os.Stat(filepath.Join(dir, CAKey)); err == nil {
		return fmt.Errorf("%w in %s", ErrExists, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"mure"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return writePair(filepath.Join(dir, CACert), filepath.Join(dir, CAKey), der, key)
}

// Issue makes a server certificate for hosts (names and IP addresses),
// valid for days, signed by the CA in caDir, written to certFile (the
// certificate, then the CA's: a node gives the CA to its sessions,
// Holder.CAPEM) and keyFile (mode 0600).
func Issue(caDir string, hosts []string, days int, certFile, keyFile string) error {
	ca, err := tls.LoadX509KeyPair(filepath.Join(caDir, CACert), filepath.Join(caDir, CAKey))
	if err != nil {
		return fmt.Errorf("load the CA from %s: %w", caDir, err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return err
	}
	if len(hosts) == 0 {
		return errors.New("a certificate needs at least one host name or IP address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0], Organization: []string{"mure"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(0, 0, days),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, der, key, ca.Certificate[0])
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// writePair writes key and the certificates chain (DER, the leaf first).
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey, chain ...[]byte) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeKey(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})); err != nil {
		return err
	}
	var out []byte
	for _, d := range append([][]byte{der}, chain...) {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d})...)
	}
	return os.WriteFile(certFile, out, 0o644)
}

// writeKey writes a private key with mode 0600, also over an existing file
// (a renewal): os.WriteFile would keep that file's mode.
func writeKey(file string, b []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadPool reads a PEM file of CA certificates, or takes the PEM itself
// when file starts with "-----BEGIN" (MURE_CA in a session holds it: the
// session's account may not read the node's files).
func LoadPool(file string) (*x509.CertPool, error) {
	b, what := []byte(file), "the PEM given"
	if !strings.HasPrefix(strings.TrimSpace(file), "-----BEGIN") {
		var err error
		if b, err = os.ReadFile(file); err != nil {
			return nil, err
		}
		what = file
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", what)
	}
	return pool, nil
}

// Holder serves a certificate and key pair from files, reloaded on
// demand (a node reloads on SIGHUP): connections made after a Reload get
// the new pair, those open keep theirs.
type Holder struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// NewHolder loads the pair once.
func NewHolder(certFile, keyFile string) (*Holder, error) {
	h := &Holder{certFile: certFile, keyFile: keyFile}
	return h, h.Reload()
}

// Reload reads the files again; on an error the previous pair stays.
func (h *Holder) Reload() error {
	c, err := tls.LoadX509KeyPair(h.certFile, h.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s, key %s: %w", h.certFile, h.keyFile, err)
	}
	if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
		return err
	}
	h.cur.Store(&c)
	return nil
}

// Config is a server TLS configuration (TLS 1.2 and up) using the
// current pair.
func (h *Holder) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return h.cur.Load(), nil }}
}

// CAPEM returns, in PEM, what a client must trust to verify the current
// chain: the CA certificates it ends with that sign themselves (a root,
// such as the CA mure ca issue puts after a node's certificate); failing
// those, its last certificate (topIssuer: a private CA's intermediate
// given without its root). Nil when nothing is needed or nothing would
// do: a chain the system's roots verify (a public CA's), or a certificate
// alone, whose issuer the node does not have. A node's sessions get it as
// MURE_CA, so that mure inside them verifies the node.
func (h *Holder) CAPEM() []byte {
	c := h.cur.Load()
	var out []byte
	for _, der := range c.Certificate[1:] {
		cert, err := x509.ParseCertificate(der)
		if err != nil || !cert.IsCA || cert.CheckSignatureFrom(cert) != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	if out != nil || len(c.Certificate) < 2 {
		return out
	}
	return topIssuer(c)
}

// topIssuer returns the last certificate of c's chain, in PEM, when a
// client trusting it alone verifies the leaf and one trusting the
// system's roots does not. A chain the system trusts gets nil: MURE_CA
// replaces the system's roots in the client, and an intermediate pinned
// there would stop verifying at the CA's next intermediate.
func topIssuer(c *tls.Certificate) []byte {
	inter := x509.NewCertPool()
	var last *x509.Certificate
	for _, der := range c.Certificate[1:] {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil
		}
		inter.AddCert(cert)
		last = cert
	}
	opts := x509.VerifyOptions{Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := c.Leaf.Verify(opts); err == nil {
		return nil // the system's roots verify it
	}
	opts.Roots = x509.NewCertPool()
	opts.Roots.AddCert(last)
	if _, err := c.Leaf.Verify(opts); err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: last.Raw})
}

// NotAfter is when the current certificate expires.
func (h *Holder) NotAfter() time.Time { return h.cur.Load().Leaf.NotAfter }
