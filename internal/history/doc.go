// Package history keeps each node's figures over time in bounded memory:
// one point a second for the last hour and one a minute for the last day,
// per node, for the dashboard, `mure top` and programs (GET /history).
//
// It is pure data: a node's monitor service (internal/monitor) samples
// the node into a Series once a second and merges the series its peers
// hold, so that a dead node's past stays visible on the others. The wire
// format (Dump) is the same for peers, programs and the browser.
package history
