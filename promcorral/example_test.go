package promcorral_test

import (
	"context"
	"errors"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/promcorral"
)

// A Collector registered with a registry exports a pool's Stats on every scrape (here,
// Gather; in a server, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}) on /metrics).
func Example() {
	p := pool.New(4, 16, pool.WithTimings())
	for i := range 10 {
		_ = p.Submit(context.Background(), func(context.Context) error {
			if i%5 == 0 {
				return errors.New("failed")
			}
			return nil
		})
	}
	_ = p.Close(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(promcorral.New(promcorral.WithPool("resize", p)))
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "corral_pool_tasks_finished_total" {
			_, _ = expfmt.MetricFamilyToText(os.Stdout, mf)
		}
	}
	// Output:
	// # HELP corral_pool_tasks_finished_total Tasks that ran, by outcome: completed (returned nil), failed (returned an error or called runtime.Goexit), panicked.
	// # TYPE corral_pool_tasks_finished_total counter
	// corral_pool_tasks_finished_total{outcome="completed",pool="resize"} 8
	// corral_pool_tasks_finished_total{outcome="failed",pool="resize"} 2
	// corral_pool_tasks_finished_total{outcome="panicked",pool="resize"} 0
}
