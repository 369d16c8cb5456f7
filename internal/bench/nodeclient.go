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
	// transports: writes' and others', and plain reads' (a pool of their
	// own, as the client keeps by default, so that reads reach the front).
	transports [2]*http.Transport
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
		c := &nodeClient{node: node}
		var hcs [2]*http.Client
		for j := range c.transports {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
			t.ExpectContinueTimeout = 5 * time.Second
			t.MaxIdleConnsPerHost = 64
			c.transports[j] = t
			hcs[j] = &http.Client{Transport: &namedTransport{base: t, name: "bench-c" + strconv.Itoa(base+i)}}
		}
		c.load = client.New([]string{node}, client.WithToken(token), client.WithHTTPClient(hcs[0]), client.WithReadHTTPClient(hcs[1]), client.WithAttempts(1))
		c.setup = client.New([]string{node}, client.WithToken(token), client.WithHTTPClient(hcs[0]), client.WithReadHTTPClient(hcs[1]))
		cs[i] = c
	}
	return cs
}

func closeNodeClients(cs []*nodeClient) {
	for _, c := range cs {
		for _, t := range c.transports {
			t.CloseIdleConnections()
		}
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
