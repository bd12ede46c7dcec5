package queue_test

import (
	"testing"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/queuetest"
)

func TestMemoryConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Backend { return queue.NewMemory() }, queuetest.Capabilities{})
}
