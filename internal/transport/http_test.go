package transport

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"
)

func TestHTTPOverMux(t *testing.T) {
	k := mustKey(t)
	a := newTestMux(t, k)
	b := newTestMux(t, k)

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "no tls", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(a.HTTPListener()) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})

	client := &http.Client{Transport: b.HTTPTransport()}
	var reused []bool
	for range 2 {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(dialCtx(t), trace), http.MethodGet, "http://"+a.Addr()+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok /x" {
			t.Fatalf("GET: status %d body %q err %v", resp.StatusCode, body, err)
		}
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("keep-alive not used: %v", reused)
	}
	if b.HTTPTransport() != b.HTTPTransport() {
		t.Fatal("HTTPTransport should be shared")
	}
}
