// Package memory is the in-memory backend of package queue, and its
// default: a queue made without queue.WithBackend keeps its jobs in a
// [Backend] from [New]. It is a backend like the others, written against
// the contract of package driver, and passes queue/queuetest; it also
// implements [driver.InProcess], through which the queue passes payload
// values without encoding them and takes a worker's next job with the ack
// of its last.
//
// Nothing it stores survives the process. Its time-based behaviour (delays,
// leases, the dedup horizon) follows the time package, so inside a
// testing/synctest bubble it runs on the bubble's virtual clock.
//
//	q, err := queue.New[Email](ctx, queue.WithBackend(memory.New()))
package memory

// Where things are: memory.go holds Backend (New, Open, Close, Stats, trim);
// enqueue.go Enqueue and EnqueueFresh (the inbox fast path, capacity,
// eviction); admin.go the operator's verbs (List, Count, Get, Cancel,
// SetPaused); receive.go Receive, ReceiveAt, AckNext and the settling
// methods; dead.go the dead letters (Bury, DeadLetters, Redrive, Purge);
// entry.go the stored jobs, their lists and heaps; wait.go the wake-one
// waiter lists; dedup.go the dedup horizon and the sweep that forgets
// expired IDs without calls; unique.go the unique keys (Message.Unique); rate.go
// TakeStart, the rate limit.
