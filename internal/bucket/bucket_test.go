package bucket_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/bucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every bucket holds its lower bound and the duration just below the next one's; the bounds
// grow; below the first bound and past the last, durations clamp to the end buckets. (The
// bounds themselves and a fuzz test are in package latency, which exports them.)
func TestOfAndLower(t *testing.T) {
	for i := range bucket.N {
		if got := bucket.Of(bucket.Lower(i)); got != i {
			t.Errorf("Of(Lower(%d) = %d) = %d", i, bucket.Lower(i), got)
		}
		if i > 0 {
			if bucket.Lower(i) <= bucket.Lower(i-1) {
				t.Fatalf("Lower(%d) = %d <= Lower(%d)", i, bucket.Lower(i), i-1)
			}
			if got := bucket.Of(bucket.Lower(i) - 1); got != i-1 {
				t.Errorf("Of(%d) = %d, want %d", bucket.Lower(i)-1, got, i-1)
			}
		}
	}
	if bucket.Of(-time.Second) != 0 || bucket.Of(1<<62) != bucket.N-1 {
		t.Errorf("Of(-1s) = %d, Of(2^62) = %d", bucket.Of(-time.Second), bucket.Of(1<<62))
	}
}
