// Package filepeer carries the file service's traffic between nodes over
// the peer port's HTTP (mutually authenticated TLS from the cluster key,
// see internal/transport): invalidations, blob pushes and fetches, and
// forwarded reads and writes. Transport is the client side (it implements
// files.Peers); Routes registers the server side on the peer mux. The
// wire format is in docs/protocol.md, "Peer messages".
package filepeer
