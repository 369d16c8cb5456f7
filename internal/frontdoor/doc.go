// Package frontdoor owns a node's front door: the cluster's one address
// for clients, opened by whichever node holds the dispatcher role
// (cluster.Cluster.Dispatcher). For each new client connection it asks a
// scheduling policy (internal/dispatch) for a node and hands the
// connection over, by a 307 redirect or by relaying its bytes, and then
// holds nothing that established traffic needs. It also owns the node
// side of a relayed hand-over: the signed preamble a node checks before it
// serves a relayed connection (AcceptHandovers). See docs/dispatch.md.
package frontdoor
