// Package dsc holds the pure building blocks of the distributed single-address
// cluster (paper 001's TCP-DSC, issue 6): every node owns the same IPv4
// address, an elected master taps client TCP SYNs with an AF_PACKET socket
// and a classic BPF filter, asks a scheduling policy for a node, and ships
// the raw IPv4 SYN to it; the chosen node injects the SYN into a TUN device
// so that its own kernel completes the handshake.
//
// This package parses and repairs tapped SYNs (packet.go), builds the BPF
// filter (filter.go) and keeps the master's table of half-open connections,
// so that a retransmitted SYN reaches the node that already answered it
// (syntable.go). It opens no sockets; the tap and the TUN come later.
package dsc
