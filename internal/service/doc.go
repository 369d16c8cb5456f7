// Package service holds what a node offers each of its services when it
// starts them: routes on the client and peer APIs, the metrics registry, a
// logger, the cluster seat and the settings (Env); and, for a service
// with a port of its own, Listen and an HTTPServer. It sits below the
// services (files, apps, the front door, the single-address agent, ...)
// and below node, which declares the Service interface and starts them:
// a service imports this package, never node, so no arrow runs up
// (docs/decisions/0013-node-services.md).
package service
