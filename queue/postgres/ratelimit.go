package postgres

import (
	"context"
	"math"
	"time"
)

// TakeStart implements driver.RateLimiter with a sliding window in the server: the queue's row
// of the table rates keeps the starts within the window, dated by the server's clock, and the
// statement that takes a start locks it, so the limit is exact across processes.
func (b *Backend) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return false, 0, err
	}
	defer cancel()
	if !b.rateRowMade.Load() {
		if _, err := b.pool.Exec(cctx, b.sql.rateRow, b.name); err != nil {
			return false, 0, calls.Fail(cctx, "take a start", err)
		}
		b.rateRowMade.Store(true)
	}
	var (
		ok   bool
		secs float64
	)
	if err := b.pool.QueryRow(cctx, b.sql.takeStart, b.name, n, micros(per)).Scan(&ok, &secs); err != nil {
		return false, 0, calls.Fail(cctx, "take a start", err)
	}
	return ok, max(time.Duration(math.Ceil(secs*float64(time.Second))), time.Millisecond), nil
}
