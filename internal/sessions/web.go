package sessions

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// WebApp is where a web session's program listens: a loopback port the
// node chose, behind a secret only the node's proxy sends.
type WebApp struct {
	Port   int    `json:"port"`
	Secret string `json:"secret"`
	// Prefix is the path the cluster serves it under (/web/ID/).
	Prefix string `json:"prefix"`
}

// SecretHeader carries a web session's secret from the proxy to the app;
// an app should refuse requests without it (other local accounts can
// reach a loopback port).
const SecretHeader = "X-Mure-Session-Secret"

const webFile = "web.json"

// WebPrefix is the path under which the cluster serves session id's app.
func WebPrefix(id string) string { return "/web/" + id + "/" }

func newWebApp(dir, id string) (WebApp, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return WebApp{}, fmt.Errorf("sessions: find a port for a web app: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var b [16]byte
	_, _ = rand.Read(b[:])
	w := WebApp{Port: port, Secret: hex.EncodeToString(b[:]), Prefix: WebPrefix(id)}
	raw, _ := json.Marshal(w)
	return w, os.WriteFile(filepath.Join(dir, webFile), raw, 0o600)
}

// env is what the app learns of its place.
func (w WebApp) env() []string {
	return []string{"PORT=" + strconv.Itoa(w.Port), "MURE_SESSION_SECRET=" + w.Secret, "MURE_BASE_URL=" + w.Prefix}
}

// Web returns the web app of a session running here.
func (m *Manager) Web(id string) (WebApp, error) {
	dir, ok := m.Dir(id)
	if !ok {
		return WebApp{}, ErrNotFound
	}
	var w WebApp
	b, err := os.ReadFile(filepath.Join(dir, webFile))
	if err != nil {
		return w, fmt.Errorf("%w: session %s is not a web session", ErrNotFound, id)
	}
	return w, json.Unmarshal(b, &w)
}
