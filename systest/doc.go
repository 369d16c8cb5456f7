// Package systest holds mure's system tests: real multi-node clusters
// started in-process (internal/testcluster) or as separate processes of
// the built binary (for kill -9 and SIGSTOP). The package has no code of
// its own besides this file and the tests.
package systest
