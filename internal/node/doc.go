// Package node is mure's composition root: from one Config it checks every
// service's configuration, opens the data directory, the peer port, the
// client ports, the blob store and the cluster seat, then starts its
// services in order — files, apps, the client and peer APIs, the front
// door, the single-address agent — and stops them in reverse. A Service is
// small (Name, Start with a service.Env, Stop, Status); each one's status
// is served under its name in /status.
package node
