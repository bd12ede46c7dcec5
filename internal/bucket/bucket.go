// Package bucket is the bucket layout of package latency's histograms (see its doc), in one
// place for latency and for a package that keeps the counts of its own histograms in a layout
// of its own (pool keeps the headers of its three side by side) and builds latency.Histogram
// values from them.
package bucket

import (
	"math"
	"time"
)

// The layout: octaves from 2^minExp to 2^maxExp nanoseconds, each split into 2^subBits
// buckets of equal width, with an underflow bucket below and an overflow bucket above.
const (
	minExp  = 10
	maxExp  = 45
	subBits = 3
	subs    = 1 << subBits
)

// N is the number of buckets.
const N = 2 + (maxExp-minExp)*subs

// Of returns the index of the bucket that holds d; a negative d is taken as 0.
//
// It reads the index off the bits of float64(d), which is exact below 2^53: past the sign
// bit, the top 11 bits are the exponent (1023 + the power of two at or below d) and the next
// subBits bits the first bits of the mantissa (which eighth of the octave d is in), so that
// bits>>(52-subBits) counts buckets of the layout from 1 ns up; an offset makes 2^minExp
// bucket 1, and what is left of the range clamps to the first or the last bucket. This is a
// conversion, a shift and two clamps, without branches: it runs for every duration recorded.
func Of(d time.Duration) int {
	b := int(math.Float64bits(float64(max(d, 0))) >> (52 - subBits))
	return min(max(b-offset, 0), N-1)
}

// offset is what Of subtracts: float64(2^minExp) shifted as Of does, minus 1.
const offset = (1023+minExp)<<subBits - 1

// Lower returns the inclusive lower bound of bucket i, for 0 <= i < N.
func Lower(i int) time.Duration {
	if i == 0 {
		return 0
	}
	i--
	exp := minExp + i>>subBits
	return time.Duration(subs+i&(subs-1)) << (exp - subBits)
}
