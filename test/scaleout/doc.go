// Package scaleout tests a tier of orphanwatch collectors behind Kafka partitioned by trace ID
// (README "Scale"), on kfake, a Kafka wire-protocol implementation for tests. It is its own
// module so that kfake never enters the main module's build list.
package scaleout
