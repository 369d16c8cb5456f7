package bench

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mure-dev/mure/client"
)

// nodeClient is one logical client pinned to one node, as the paper's
// client machines were spread over the servers.
type nodeClient struct {
	node string
	// load makes a single attempt per request, so that failures show up as
	// errors instead of hidden retries; setup retries as the CLI does.
	load, setup *client.Client
	transport   *http.Transport
}

// newNodeClients returns n clients, client i pinned to
// nodes[(base+i)%len(nodes)], base being the global index of the first.
// Each has its own connection pool and names itself "bench-c<i>" in the
// X-Mure-Client header, so that a node tells them apart (the "reads"
// resumption policy counts distinct clients, as the paper's prototype did).
func newNodeClients(nodes []string, token string, base, n int) []*nodeClient {
	cs := make([]*nodeClient, n)
	for i := range cs {
		node := nodes[(base+i)%len(nodes)]
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		t.ExpectContinueTimeout = 5 * time.Second
		t.MaxIdleConnsPerHost = 64
		hc := &http.Client{Transport: &namedTransport{base: t, name: "bench-c" + strconv.Itoa(base+i)}}
		cs[i] = &nodeClient{
			node:      node,
			load:      client.New([]string{node}, client.WithToken(token), client.WithHTTPClient(hc), client.WithAttempts(1)),
			setup:     client.New([]string{node}, client.WithToken(token), client.WithHTTPClient(hc)),
			transport: t,
		}
	}
	return cs
}

func closeNodeClients(cs []*nodeClient) {
	for _, c := range cs {
		c.transport.CloseIdleConnections()
	}
}

// namedTransport sets X-Mure-Client on every request.
type namedTransport struct {
	base http.RoundTripper
	name string
}

func (t *namedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context()) // a RoundTripper must not modify the request
	r2.Header.Set("X-Mure-Client", t.name)
	return t.base.RoundTrip(r2)
}
