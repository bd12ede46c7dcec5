package serverversion

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"2.9.0", true}, {"2.9.10", true}, {"2.14.5", true}, {"v2.10.0-beta", true}, {"3.0.0", true},
		{"2.8.4", false}, {"1.99.99", false}, {"2.9", false}, {"", false},
	} {
		if got := AtLeast(c.v, 2, 9, 0); got != c.want {
			t.Errorf("AtLeast(%q, 2.9.0) = %v, want %v", c.v, got, c.want)
		}
	}
}
