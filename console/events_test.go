package console_test

import (
	"testing"

	"github.com/corral-go/corral/console"
)

// TestSlowClientDisconnected pins the policy for a client of the live updates that does not
// read: its buffer fills, it misses the next snapshots, and after a buffer's worth in a row it
// is disconnected; nothing is queued beyond its buffer.
func TestSlowClientDisconnected(t *testing.T) {
	missed, gone := console.SlowClient(3 * console.ClientBuffer)
	if !gone || missed != console.ClientBuffer {
		t.Errorf("slow client: missed %d, disconnected %v; want %d, true", missed, gone, console.ClientBuffer)
	}
	if missed, gone := console.SlowClient(console.ClientBuffer - 1); gone || missed != 0 {
		t.Errorf("client within its buffer: missed %d, disconnected %v; want 0, false", missed, gone)
	}
}
