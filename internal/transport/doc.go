// Package transport owns a mure node's single peer address (host:port) and
// everything that flows over it between nodes: memberlist gossip (UDP
// packets and TCP streams), hashicorp/raft RPCs and the internal HTTP API
// used for replication.
//
// All TCP traffic is mutually authenticated and encrypted with TLS 1.3
// using a certificate derived deterministically from the shared cluster
// [Key]: every node holds the same certificate, and a peer is accepted only
// if it proves possession of the key-derived private key. A process without
// the cluster key cannot complete a handshake in either direction.
//
// After the handshake the dialer writes one byte naming the protocol
// ([ProtoRaft], [ProtoGossip], [ProtoHTTP]); the [Mux] routes the
// connection to the matching sub-listener.
//
// UDP packets on the same host:port are memberlist's; memberlist encrypts
// them itself with [Key.GossipKey], so the mux only moves bytes.
package transport
