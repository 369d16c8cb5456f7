package transport

import (
	"context"
	"net"
	"net/http"
	"time"
)

// HTTPListener returns the 'H' sub-listener for the internal http.Server.
// Accepted conns are *tls.Conn with the handshake already done; serve them
// with plain http.Server.Serve (not ServeTLS).
func (m *Mux) HTTPListener() net.Listener { return m.subs[ProtoHTTP] }

// HTTPTransport returns the mux's shared HTTP client transport: requests
// to "http://<peer addr>/..." travel over authenticated 'H' connections.
// The same *http.Transport is returned on every call; Mux.Close closes its
// idle connections.
func (m *Mux) HTTPTransport() *http.Transport { return m.httpTr }

func (m *Mux) newHTTPTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil, // never proxy peer traffic
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return m.Dial(ctx, addr, ProtoHTTP)
		},
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
