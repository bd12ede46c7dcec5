package browsertest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/console/internal/browsertest"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The operator's scenarios on the in-memory backend.
func TestRunInMemory(t *testing.T) {
	browsertest.Run(t, func(*testing.T) driver.Backend { return memory.New() })
}
