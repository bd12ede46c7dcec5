package queue_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// The sentinels users branch on are package driver's values under the same
// names: an error a backend returns matches either name.
func TestSentinelsAreTheDriversValues(t *testing.T) {
	for _, p := range []struct{ q, d error }{
		{queue.ErrFull, driver.ErrFull},
		{queue.ErrDropped, driver.ErrDropped},
		{queue.ErrDuplicate, driver.ErrDuplicate},
		{queue.ErrClosed, driver.ErrClosed},
		{queue.ErrNotFound, driver.ErrNotFound},
		{queue.ErrLeaseLost, driver.ErrLeaseLost},
		{queue.ErrLeaseExpired, driver.ErrLeaseExpired},
		{queue.ErrUnavailable, driver.ErrUnavailable},
	} {
		wrapped := fmt.Errorf("backend: %w", p.d)
		if p.q != p.d || !errors.Is(wrapped, p.q) {
			t.Errorf("queue's %q is not driver's %q", p.q, p.d)
		}
	}
}
