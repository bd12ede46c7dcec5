package promcorral

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral/queue"
)

// A Collector exports the state of the pools, queues, Shares and retry budgets given to [New]
// as Prometheus metrics (see the package doc for the list). It implements
// prometheus.Collector; register it with a prometheus.Registerer. It is safe for concurrent
// use, and what it exports is fixed by New.
type Collector struct {
	d       descs
	buckets []bucketBound
	pools   []namedPool
	queues  []cachedSource[queue.Stats]
	shares  []cachedSource[[]queue.ShareStats]
	budgets []namedBudget
}

// cachedSource is a queue or Share, read through a cache.
type cachedSource[T any] struct {
	name string
	c    *cached[T]
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector of the sources given by the options. It panics if an option is nil
// or two sources of the same kind have the same name (their series would clash).
func New(opts ...Option) *Collector {
	o := options{namespace: DefaultNamespace, timeout: DefaultStatsTimeout, interval: DefaultStatsInterval,
		buckets: defaultBuckets()}
	for _, opt := range opts {
		if opt == nil {
			panic("promcorral: nil option")
		}
		opt.apply(&o)
	}
	c := &Collector{d: newDescs(o.namespace), buckets: bucketBounds(o.buckets), pools: o.pools, budgets: o.budgets}
	for _, q := range o.queues {
		c.queues = append(c.queues, cachedSource[queue.Stats]{q.name,
			newCached(q.q.Stats, keepHealth, o.timeout, o.interval)})
	}
	for _, s := range o.shares {
		c.shares = append(c.shares, cachedSource[[]queue.ShareStats]{s.name,
			newCached(s.s.Stats, nil, o.timeout, o.interval)})
	}
	unique("pool", o.pools, func(p namedPool) string { return p.name })
	unique("queue", o.queues, func(q namedQueue) string { return q.name })
	unique("share", o.shares, func(s namedShare) string { return s.name })
	unique("budget", o.budgets, func(b namedBudget) string { return b.name })
	return c
}

// unique panics if two of xs have the same name.
func unique[T any](kind string, xs []T, name func(T) string) {
	seen := make(map[string]bool, len(xs))
	for _, x := range xs {
		n := name(x)
		if seen[n] {
			panic("promcorral: two " + kind + "s named " + strconv.Quote(n))
		}
		seen[n] = true
	}
}

// Describe sends the descriptions of every metric the Collector may export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect reads the sources and sends their metrics: every pool's Stats and budget's balance
// now, every queue's and Share's Stats as the cache holds them (reading them again, within
// the stats timeout, if they are an interval old). A queue or Share none of whose reads has
// succeeded yet exports only its stats_errors_total.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	e := emit{ch: ch, buckets: c.buckets}
	for _, p := range c.pools {
		s := p.p.Stats()
		e.pool(&c.d, p.name, &s)
	}
	for _, q := range c.queues {
		s, ok, errs := q.c.get()
		if ok {
			e.queue(&c.d, q.name, &s)
		}
		e.counter(c.d.queueStatsErrors, errs, q.name)
	}
	for _, sh := range c.shares {
		s, ok, errs := sh.c.get()
		if ok {
			e.share(&c.d, sh.name, s)
		}
		e.counter(c.d.shareStatsErrors, errs, sh.name)
	}
	for _, b := range c.budgets {
		e.gauge(c.d.budgetTokens, b.b.Balance(), b.name)
	}
}

// keepHealth takes into last, a queue's last Stats read, the Health of a read that failed
// (queue.Queue's Stats returns it with the error): reachable or not as of that read, its
// error, and its counts, which never go back (a Queue that returns no Health with its error
// leaves them as they were).
func keepHealth(last, failed *queue.Stats) {
	h := failed.Health
	h.Reconnects = max(h.Reconnects, last.Health.Reconnects)
	h.Losses = max(h.Losses, last.Health.Losses)
	last.Health = h
}
