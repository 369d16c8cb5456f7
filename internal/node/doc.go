// Package node is mure's composition root: from one Config it opens the
// data directory, the peer port, the cluster seat, the blob store and the
// file service, serves the client and peer HTTP APIs, and shuts all of it
// down in reverse order.
package node
