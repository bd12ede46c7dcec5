package retry

import (
	"math/big"
	"time"
)

// FloorLimit exposes, for tests, the most retries b's floor grants by t after NewBudget:
// floor(max(1, m) + m×t) for a floor of m per second.
func FloorLimit(b *Budget, t time.Duration) *big.Int {
	l, _ := b.floor.limit(uint64(t))
	hi := new(big.Int).SetUint64(l.hi)
	return hi.Lsh(hi, 64).Add(hi, new(big.Int).SetUint64(l.lo))
}
