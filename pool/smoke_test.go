package pool_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/pool"
)

func TestSmoke(t *testing.T) {
	p := pool.New(4, 16)
	var n atomic.Int64
	for i := 0; i < 1000; i++ {
		if err := p.Submit(context.Background(), func(ctx context.Context) error { n.Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1000 {
		t.Fatal(n.Load())
	}
	t.Logf("%+v", p.Stats())
}
