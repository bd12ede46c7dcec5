package console

import "time"

// Test access to the live updates' hub.

// SlowClient joins a client that never reads, publishes n snapshots, and reports how many it
// missed before it was disconnected (0 if it was not) and whether it was.
func SlowClient(n int) (missed int, gone bool) {
	var h hub
	h.init(1)
	cl := h.join() // the first snapshot fills one slot
	for range n {
		h.publish(time.Time{}, time.Second, []queueState{{Name: "q"}}, nil)
		select {
		case <-cl.gone:
			return cl.dropped, true
		default:
		}
	}
	return cl.dropped, false
}

// ClientBuffer is the buffer of a client of the live updates.
const ClientBuffer = clientBuffer

// Short is how the overview formats a duration.
var Short = short
