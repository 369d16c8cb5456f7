package frontdoor

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/dispatch"
)

// choiceKey carries a connection's *choice in its requests' contexts.
type choiceKey struct{}

// choice is the node chosen for one front-door connection, at its first
// request; every request on the connection goes to the same node.
type choice struct {
	id, addr string
}

// redirectServer answers every request with a 307 to the node chosen for
// its connection. Slow clients are bounded by HeaderTimeout, idle ones by
// IdleTimeout, headers by 16 KiB; net/http answers malformed requests 400.
func (d *Door) redirectServer() *http.Server {
	return &http.Server{
		Handler:           http.HandlerFunc(d.redirect),
		ReadHeaderTimeout: d.cfg.HeaderTimeout,
		ReadTimeout:       d.cfg.HeaderTimeout,
		IdleTimeout:       d.cfg.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			d.stats.accepted.Add(1)
			return context.WithValue(ctx, choiceKey{}, &choice{})
		},
	}
}

func (d *Door) redirect(w http.ResponseWriter, r *http.Request) {
	ch, _ := r.Context().Value(choiceKey{}).(*choice)
	if ch == nil {
		ch = &choice{}
	}
	if ch.id == "" {
		client := dispatch.Conn{}
		if ap, err := netipAddrPort(r.RemoteAddr); err == nil {
			client.Client = ap
		}
		n, ok := d.choose(client)
		if !ok {
			api.Unavailable(w, 1, api.CodeUnavailable, "the front door knows no live node to send this connection to; retry shortly")
			return
		}
		ch.id, ch.addr = n.ID, n.Addr
	}
	loc := "http://" + ch.addr + r.URL.RequestURI()
	h := w.Header()
	h.Set("Location", loc)
	h.Set("X-Mure-Node", ch.id)
	h.Set("Cache-Control", "no-store")
	api.JSON(w, http.StatusTemporaryRedirect, map[string]string{"redirect": loc, "node": ch.id})
}
