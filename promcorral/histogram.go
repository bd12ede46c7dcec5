package promcorral

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral/latency"
)

// defaultBuckets are the powers of two of nanoseconds from 2^14 to 2^36, each a bound of
// latency's buckets.
func defaultBuckets() []time.Duration {
	var b []time.Duration
	for e := 14; e <= 36; e++ {
		b = append(b, time.Duration(1)<<e)
	}
	return b
}

// bucketBound is an exported bucket: the index of the last latency bucket it counts, and its
// bound in seconds.
type bucketBound struct {
	last  int
	upper float64
}

// bucketBounds rounds each of bounds up to a bound of latency's buckets (dropping one that
// rounds to the bound of the one before it, or past the last finite bound).
func bucketBounds(bounds []time.Duration) []bucketBound {
	var out []bucketBound
	k := 0
	for _, b := range bounds {
		for k < latency.Buckets-1 && latency.UpperBound(k) < b {
			k++
		}
		if k == latency.Buckets-1 {
			break // +Inf, which every Prometheus histogram has
		}
		if len(out) > 0 && out[len(out)-1].last == k {
			continue
		}
		out = append(out, bucketBound{last: k, upper: latency.UpperBound(k).Seconds()})
	}
	return out
}

// histogram converts h to a constant Prometheus histogram of desc with the exported buckets.
func histogram(desc *prometheus.Desc, h *latency.Histogram, buckets []bucketBound, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(buckets))
	var n uint64
	i := 0
	for _, b := range buckets {
		for ; i <= b.last; i++ {
			n += h.Counts[i]
		}
		cum[b.upper] = n
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum.Seconds(), cum, labels...)
}
