package transport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// certCommonName is the subject (and issuer) of the cluster certificate.
const certCommonName = "mure-cluster"

// errPeerKey is returned by the peer verification when the peer's
// certificate was not derived from our cluster key.
var errPeerKey = errors.New("transport: peer certificate does not match the cluster key")

// TLSConfigs returns the server and client TLS configurations for key k.
// Both sides present the same key-derived self-signed certificate and accept
// a peer only if its leaf certificate carries the key-derived public key
// (TLS 1.3 CertificateVerify proves the peer holds the private key).
func TLSConfigs(k Key) (server, client *tls.Config, err error) {
	cert, pub, err := clusterCertificate(k)
	if err != nil {
		return nil, nil, err
	}
	verify := func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		return verifyPeer(rawCerts, pub)
	}
	server = &tls.Config{
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{cert},
		ClientAuth:             tls.RequireAnyClientCert,
		VerifyPeerCertificate:  verify,
		SessionTicketsDisabled: true,
	}
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ServerName:   certCommonName,
		// The chain is verified by VerifyPeerCertificate against the
		// key-derived public key instead of a CA pool.
		InsecureSkipVerify:    true, //nolint:gosec // custom verification below
		VerifyPeerCertificate: verify,
	}
	return server, client, nil
}

// clusterCertificate deterministically derives the ed25519 key pair from k
// and builds the self-signed cluster certificate.
func clusterCertificate(k Key) (tls.Certificate, ed25519.PublicKey, error) {
	seed := k.derive(tlsKeyLabel)
	priv := ed25519.NewKeyFromSeed(seed[:])
	pub := priv.Public().(ed25519.PublicKey)

	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: certCommonName},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("transport: create cluster certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("transport: parse cluster certificate: %w", err)
	}
	return tls.Certificate{
		Certificate: [][]byte{der},
		PrivateKey:  priv,
		Leaf:        leaf,
	}, pub, nil
}

// verifyPeer checks that the peer's leaf certificate holds the public key
// want.
func verifyPeer(rawCerts [][]byte, want ed25519.PublicKey) error {
	if len(rawCerts) == 0 {
		return errors.New("transport: peer presented no certificate")
	}
	leaf, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return fmt.Errorf("transport: parse peer certificate: %w", err)
	}
	got, ok := leaf.PublicKey.(ed25519.PublicKey)
	if !ok || !bytes.Equal(got, want) {
		return errPeerKey
	}
	return nil
}
