package bench

import (
	"testing"
	"time"

	cenkalti "github.com/cenkalti/backoff/v5"

	"github.com/corral-go/corral/backoff"
)

var backoffSink time.Duration

// BenchmarkBackoffNext measures one jittered exponential delay: corral with full jitter,
// cenkalti with its default ±50% randomisation, both from 500ms doubling to a 60s cap and
// restarted every 16 delays: 7 growing delays, then 9 at the cap.
func BenchmarkBackoffNext(b *testing.B) {
	b.Run("corral", func(b *testing.B) {
		p := backoff.Exponential(500*time.Millisecond, 2, time.Minute, backoff.WithJitter(backoff.FullJitter))
		seq := p.Sequence()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i++; i%16 == 0 {
				seq.Reset()
			}
			backoffSink = seq.Next()
		}
	})
	b.Run("cenkalti", func(b *testing.B) {
		e := cenkalti.NewExponentialBackOff()
		e.Multiplier = 2
		e.MaxInterval = time.Minute
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i++; i%16 == 0 {
				e.Reset()
			}
			backoffSink = e.NextBackOff()
		}
	})
}
