// Package jetstream runs corral's queue on NATS JetStream, for when one process is not enough.
package jetstream
