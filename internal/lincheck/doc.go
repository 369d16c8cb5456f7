// Package lincheck records histories of file operations against a mure
// cluster and checks them for linearizability with porcupine, per file, as
// a register with compare-and-set, create-only and delete. It is the
// judge of the robustness tests (systest/linear_test.go).
//
// Every written value must be unique, so that a value names the one write
// (and version) that produced it. An operation whose outcome is unknown
// (timeout, lost connection, 5xx) is recorded as returning at the end of
// time: it may or may not have taken effect, and the checker considers
// both. Each such open write can double the checker's search, so Check
// first bounds those whose value was seen (boundObserved), and the
// robustness clients settle the others by idempotent retries (AddBounded;
// decision 0054).
package lincheck
