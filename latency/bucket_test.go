package latency_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/corral-go/corral/latency"
)

// lower is the inclusive lower bound of bucket i.
func lower(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return latency.UpperBound(i - 1)
}

// The bounds are the ones the package doc lists: 2^10 ns, then 8 equal steps per power of two
// up to 2^45 ns, then no bound.
func TestUpperBounds(t *testing.T) {
	if latency.Buckets != 282 {
		t.Fatalf("Buckets = %d, want 282", latency.Buckets)
	}
	want := []struct {
		i     int
		bound time.Duration
	}{
		{0, 1024}, {1, 1152}, {2, 1280}, {7, 1920}, {8, 2048}, {9, 2304},
		{latency.Buckets - 3, 1<<45 - 1<<41}, {latency.Buckets - 2, 1 << 45},
		{latency.Buckets - 1, math.MaxInt64},
	}
	for _, w := range want {
		if got := latency.UpperBound(w.i); got != w.bound {
			t.Errorf("UpperBound(%d) = %d, want %d", w.i, got, w.bound)
		}
	}
	for i := 1; i < latency.Buckets; i++ {
		lo, hi := latency.UpperBound(i-1), latency.UpperBound(i)
		if hi <= lo {
			t.Fatalf("UpperBound(%d) = %v <= UpperBound(%d) = %v", i, hi, i-1, lo)
		}
		if i < latency.Buckets-1 && (hi-lo)*8 > lo {
			t.Fatalf("bucket %d = [%v, %v) is wider than an eighth of its lower bound", i, lo, hi)
		}
	}
	for _, i := range []int{-1, latency.Buckets} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("UpperBound(%d) did not panic", i)
				}
			}()
			latency.UpperBound(i)
		}()
	}
}

// Each bucket holds its lower bound and the duration just below its upper bound.
func TestBucketEdges(t *testing.T) {
	for i := range latency.Buckets {
		if got := latency.BucketOf(lower(i)); got != i {
			t.Errorf("BucketOf(%d) = %d, want %d", lower(i), got, i)
		}
		if got := latency.BucketOf(latency.UpperBound(i) - 1); got != i {
			t.Errorf("BucketOf(%d) = %d, want %d", latency.UpperBound(i)-1, got, i)
		}
	}
	if got := latency.BucketOf(-time.Hour); got != 0 {
		t.Errorf("BucketOf(-1h) = %d, want 0", got)
	}
}

// checkBucket fails unless d lands in the bucket whose bounds contain it (0 for a negative d).
func checkBucket(t *testing.T, d time.Duration) {
	t.Helper()
	i := latency.BucketOf(d)
	if i < 0 || i >= latency.Buckets {
		t.Fatalf("BucketOf(%d) = %d, out of range", d, i)
	}
	if v := max(d, 0); v < lower(i) || v >= latency.UpperBound(i) && i < latency.Buckets-1 {
		t.Fatalf("BucketOf(%d) = %d = [%d, %d)", d, i, lower(i), latency.UpperBound(i))
	}
}

// checkMonotone fails if a shorter duration lands in a later bucket than a longer one.
func checkMonotone(t *testing.T, a, b time.Duration) {
	t.Helper()
	if a > b {
		a, b = b, a
	}
	if latency.BucketOf(a) > latency.BucketOf(b) {
		t.Fatalf("BucketOf(%d) = %d > BucketOf(%d) = %d", a, latency.BucketOf(a), b, latency.BucketOf(b))
	}
}

// The properties of FuzzBucket, over random durations of every magnitude.
func TestBucketProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		a := time.Duration(r.Int64() >> r.IntN(64))
		b := time.Duration(r.Int64() >> r.IntN(64))
		if r.IntN(4) == 0 {
			a = -a
		}
		checkBucket(t, a)
		checkMonotone(t, a, b)
	}
}

func FuzzBucket(f *testing.F) {
	for _, d := range []int64{0, -1, 1, 1023, 1024, 1025, 1151, 1152, 2047, 2048, 1<<45 - 1, 1 << 45,
		math.MaxInt64, math.MinInt64, int64(time.Millisecond), int64(time.Hour)} {
		f.Add(d, d+1)
	}
	f.Fuzz(func(t *testing.T, a, b int64) {
		checkBucket(t, time.Duration(a))
		checkBucket(t, time.Duration(b))
		checkMonotone(t, time.Duration(a), time.Duration(b))
	})
}
