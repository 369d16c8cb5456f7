// Package monitor is the node service "monitor": it samples this node's
// figures once a second into a history (internal/history), pulls the
// history its peers hold over the peer port so that every node holds the
// whole cluster's past (a dead node's included), and shows it: GET
// /history for programs, the dashboard at /ui for people
// (docs/dashboard.md), which `mure top` reads too.
package monitor
