package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
)

// Listen listens on addr for the service started with option flag (named
// in the error, e.g. "--s3") and wraps the listener with wrap (TLS when
// the client ports speak it; nil: plain).
func Listen(flag, addr string, wrap func(net.Listener) net.Listener) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	return ln, nil
}

// HTTPServer is an http.Server serving one listener of a service's own
// (S3, WebDAV, the caching proxy) in a goroutine that Shutdown waits for.
type HTTPServer struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// ServeHTTP serves srv on ln until Shutdown; an error that stops it
// earlier is logged.
func ServeHTTP(ln net.Listener, srv *http.Server, log *slog.Logger) *HTTPServer {
	s := &HTTPServer{srv: srv, addr: ln.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "addr", s.addr, "err", err)
		}
	}()
	return s
}

// Addr is the address served.
func (s *HTTPServer) Addr() string { return s.addr }

// Shutdown stops accepting requests and waits for those in flight, then
// closes the connections still open once ctx is done, and waits for the
// serving goroutine.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}
