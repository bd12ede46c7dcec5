package promcorral

import (
	"context"
	"strconv"
	"time"

	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// An Option configures a Collector in [New]. A nil Option makes New panic.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	namespace string
	buckets   []time.Duration
	timeout   time.Duration
	interval  time.Duration
	pools     []namedPool
	queues    []namedQueue
	shares    []namedShare
	budgets   []namedBudget
}

type (
	namedPool struct {
		name string
		p    *pool.Pool
	}
	namedQueue struct {
		name string
		q    Queue
	}
	namedShare struct {
		name string
		s    *queue.Share
	}
	namedBudget struct {
		name string
		b    *retry.Budget
	}
)

// Queue is what the Collector reads of a queue: *queue.Queue[T] implements it, for any T.
// Like queue.Queue's, a Stats that fails returns the queue's Health all the same.
type Queue interface {
	Stats(ctx context.Context) (queue.Stats, error)
}

// Defaults.
const (
	DefaultNamespace     = "corral"
	DefaultStatsTimeout  = time.Second
	DefaultStatsInterval = 10 * time.Second
)

// WithPool exports p's Stats, labelled pool=name. It panics if p is nil or name is empty.
func WithPool(name string, p *pool.Pool) Option {
	if p == nil || name == "" {
		panic("promcorral: WithPool(" + strconv.Quote(name) + ", ...): need a name and a pool")
	}
	return optionFunc(func(o *options) { o.pools = append(o.pools, namedPool{name, p}) })
}

// WithQueue exports q's Stats, labelled queue=name, read at most once per stats interval (see
// the package doc). It panics if q is nil or name is empty.
func WithQueue(name string, q Queue) Option {
	if q == nil || name == "" {
		panic("promcorral: WithQueue(" + strconv.Quote(name) + ", ...): need a name and a queue")
	}
	return optionFunc(func(o *options) { o.queues = append(o.queues, namedQueue{name, q}) })
}

// WithShare exports the Stats of s's consumers, labelled share=name and consumer=the name
// each gave queue.WithShare, read at most once per stats interval (see the package doc). It
// panics if s is nil or name is empty.
func WithShare(name string, s *queue.Share) Option {
	if s == nil || name == "" {
		panic("promcorral: WithShare(" + strconv.Quote(name) + ", ...): need a name and a share")
	}
	return optionFunc(func(o *options) { o.shares = append(o.shares, namedShare{name, s}) })
}

// WithBudget exports b's balance, labelled budget=name. It panics if b is nil or name is
// empty.
func WithBudget(name string, b *retry.Budget) Option {
	if b == nil || name == "" {
		panic("promcorral: WithBudget(" + strconv.Quote(name) + ", ...): need a name and a budget")
	}
	return optionFunc(func(o *options) { o.budgets = append(o.budgets, namedBudget{name, b}) })
}

// WithNamespace sets the first word of every metric's name (default "corral"). An empty ns
// leaves it out: pool_tasks_submitted_total.
func WithNamespace(ns string) Option {
	return optionFunc(func(o *options) { o.namespace = ns })
}

// WithBuckets sets the upper bounds of the exported histograms' buckets. Each bound is
// rounded up to the nearest bound of latency's buckets (latency.UpperBound), so that every
// exported bucket counts exactly the durations below its bound; the bound exported as le is
// that one. (latency's bounds are exclusive and Prometheus's inclusive: a duration equal to a
// bound, to the nanosecond, counts in the next bucket.) The default is the powers of two of
// nanoseconds from 2^14 (about 16µs) to 2^36 (about 69s). It panics if the bounds are not
// positive and increasing.
func WithBuckets(bounds ...time.Duration) Option {
	for i, b := range bounds {
		if b <= 0 || i > 0 && b <= bounds[i-1] {
			panic("promcorral: WithBuckets: bounds must be positive and increasing, got " + b.String() + " at " + strconv.Itoa(i))
		}
	}
	bounds = append([]time.Duration(nil), bounds...)
	return optionFunc(func(o *options) { o.buckets = bounds })
}

// WithStatsTimeout bounds each read of a queue's or a Share's Stats (default 1s). It panics
// if d is not positive.
func WithStatsTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("promcorral: WithStatsTimeout(" + d.String() + "): need a positive timeout")
	}
	return optionFunc(func(o *options) { o.timeout = d })
}

// WithStatsInterval sets how long the values read from a queue's or a Share's Stats are
// served to scrapes before they are read again (default 10s). 0 reads them on every scrape
// (still one read at a time: scrapes that come during a read wait for it and get its
// values). It panics if d is negative.
func WithStatsInterval(d time.Duration) Option {
	if d < 0 {
		panic("promcorral: WithStatsInterval(" + d.String() + "): negative interval")
	}
	return optionFunc(func(o *options) { o.interval = d })
}
