package redis

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// takes numbers the starts a process takes, so that two starts in one millisecond are two
// members of the window.
var takes atomic.Uint64

// TakeStart implements driver.RateLimiter with a sliding window in the server, in one script:
// a sorted set of the starts taken, dated by the server's clock, so the limit is exact across
// processes, to the millisecond.
func (b *Backend) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	if err := b.life.Check(calls); err != nil {
		return false, 0, err
	}
	member := b.consumer + ":" + strconv.FormatUint(takes.Add(1), 10)
	v, err := b.run(ctx, "take a start", takeStartScript, n, millis(per), member)
	if err != nil {
		return false, 0, err
	}
	r, _ := v.([]any)
	if len(r) < 2 {
		return false, 0, errors.New("redis: take a start: short reply")
	}
	ok, _ := r[0].(int64)
	wait, _ := r[1].(int64)
	return ok == 1, time.Duration(wait) * time.Millisecond, nil
}
