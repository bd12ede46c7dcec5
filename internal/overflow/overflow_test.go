package overflow

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestName(t *testing.T) {
	for _, c := range []struct {
		o, last int
		want    string
	}{
		{0, 3, "block"}, {1, 3, "reject"}, {2, 3, "drop-newest"}, {3, 3, "drop-oldest"},
		{4, 3, "Overflow(4)"}, {4, 4, "caller-runs"}, {5, 4, "Overflow(5)"},
		{5, 9, "Overflow(5)"}, {-1, 4, "Overflow(-1)"},
	} {
		if got := Name(c.o, c.last); got != c.want {
			t.Errorf("Name(%d, %d) = %q, want %q", c.o, c.last, got, c.want)
		}
	}
}
