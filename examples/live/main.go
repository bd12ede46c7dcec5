// Command live shows a workload's progress to a person watching: a page on
// loopback whose numbers (queue depth, acked, retried, dead, the pool's
// running and queued tasks) update live over Server-Sent Events. Standard
// library only, no broker, no external assets.
//
// The workload imports a few hundred images: a producer enqueues one job per
// image into a bounded queue (it waits when the queue is full), a consumer
// fetches each image (an I/O wait) and resizes it on a pool bounded to the
// CPU count. Some fetches fail once and are retried; a few images are corrupt
// and land in the dead letters.
//
// GET / is the page, GET /events the event stream (one "data: {json}" event
// per tick), GET /stats one snapshot as JSON for those who prefer to poll.
//
// With no flags the program prints the URL, runs the workload (a second or
// two), prints the final stats, stops serving and exits: the page is there
// only while the workload runs, and the program says so. With -hold the
// workload starts when the first viewer opens the page, and the server keeps
// serving until SIGINT or SIGTERM:
//
//	go run ./examples/live
//	go run ./examples/live -hold -addr 127.0.0.1:8080   # then open http://127.0.0.1:8080/
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
	"github.com/corral-go/corral/scope"
)

// The demo's bounds.
const (
	queueCapacity = 64                     // images stored and not settled; the producer waits beyond it
	fetchWorkers  = 4                      // images fetched at once
	resizeQueue   = 2 * fetchWorkers       // resizes waiting for a pool worker
	jobLease      = 10 * time.Second       // a handler running longer is cancelled and its job redelivered
	maxAttempts   = 3                      // attempts per image before it is dead-lettered
	retryDelay    = 100 * time.Millisecond // wait before a failed fetch is retried
	maxViewers    = 16                     // event streams served at once; beyond it /events answers 503
	writeTimeout  = 5 * time.Second        // for one response, or one event of a stream
	closeTimeout  = 5 * time.Second        // for the consumer, the server and the pool to stop

	fetchLatency = 15 * time.Millisecond // one image fetch
	resizeRounds = 1000                  // SHA-256 rounds that stand in for resizing an image
	flakyEvery   = 25                    // every 25th fetch fails on its first attempt
	corruptEvery = 150                   // the last image of every 150 is corrupt
)

type config struct {
	addr          string        // listen address
	hold          bool          // keep serving until a signal
	jobs          int           // images in the workload
	tick          time.Duration // interval between two events of a stream
	waitForViewer bool          // start the workload when the first viewer connects
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:0", "listen address")
	flag.BoolVar(&cfg.hold, "hold", false, "start the workload when the page is opened, and serve until SIGINT or SIGTERM")
	flag.IntVar(&cfg.jobs, "jobs", 300, "images in the workload")
	flag.DurationVar(&cfg.tick, "tick", 100*time.Millisecond, "interval between two live updates")
	flag.Parse()
	cfg.waitForViewer = cfg.hold
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

// run serves the page, runs the workload, prints the final stats to out and,
// with cfg.hold, serves until ctx ends.
func run(ctx context.Context, cfg config, out io.Writer) error {
	d, err := newDemo(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return errors.Join(err, d.close(context.Background()))
	}
	srv := &http.Server{
		Handler:           d.handler(),
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      writeTimeout, // event streams extend it before each event
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	// Shutdown waits for requests to finish, and a stream never does by
	// itself: tell the streams to send their last event and return.
	srv.RegisterOnShutdown(d.stopStreams)
	url := fmt.Sprintf("http://%s/", ln.Addr())
	if cfg.hold {
		fmt.Fprintf(out, "live stats at %s\n", url)
	} else {
		fmt.Fprintf(out, "live stats at %s while the workload runs (a second or two; -hold keeps serving after it)\n", url)
	}
	if cfg.waitForViewer {
		fmt.Fprintln(out, "the workload starts when the page is opened")
	}

	return scope.Run(ctx, func(s *scope.Scope) error {
		s.GoNamed("http", func(context.Context) error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		s.GoNamed("workload", func(ctx context.Context) error {
			werr := d.work(ctx)
			if werr == nil {
				fmt.Fprintln(out, d.summary())
				if cfg.hold {
					fmt.Fprintln(out, "serving until SIGINT or SIGTERM")
					<-ctx.Done()
				}
			}
			// The scope's context may be done: stopping gets its own bound.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
			defer cancel()
			err := errors.Join(werr, srv.Shutdown(cctx), d.close(cctx))
			if !cfg.hold {
				fmt.Fprintf(out, "stopped serving %s (run with -hold to keep the page up)\n", url)
			}
			return err
		})
		return nil
	})
}

// image is a job's payload.
type image struct {
	N   int    `json:"n"`
	URL string `json:"url"`
}

// demo is the workload and what serves its stats.
type demo struct {
	cfg    config
	q      *queue.Queue[image]
	resize *pool.Pool

	viewers  chan struct{} // holds a token per stream served; capacity maxViewers
	watched  chan struct{} // closed when the first stream starts
	watch    sync.Once     // closes watched
	stopped  chan struct{} // closed by stopStreams
	stop     sync.Once     // closes stopped
	finished chan struct{} // closed by work once every job is acked or dead-lettered

	mu      sync.Mutex // guards the fields below
	started time.Time  // when the workload started (zero before)
	took    time.Duration
}

func newDemo(cfg config) (*demo, error) {
	if cfg.jobs < 1 || cfg.tick <= 0 {
		return nil, fmt.Errorf("need jobs >= 1 and a positive tick, got %d and %v", cfg.jobs, cfg.tick)
	}
	d := &demo{
		cfg:      cfg,
		resize:   pool.New(runtime.GOMAXPROCS(0), resizeQueue, pool.WithTimings()),
		viewers:  make(chan struct{}, maxViewers),
		watched:  make(chan struct{}),
		stopped:  make(chan struct{}),
		finished: make(chan struct{}),
	}
	q, err := queue.New[image](context.Background(), queue.WithCapacity(queueCapacity)) // Block: the producer waits for room
	if err != nil {
		return nil, errors.Join(err, d.resize.Close(context.Background()))
	}
	d.q = q
	return d, nil
}

// close stops the event streams, the pool and the queue.
func (d *demo) close(ctx context.Context) error {
	d.stopStreams()
	return errors.Join(d.resize.Close(ctx), d.q.Close(ctx))
}

// stopStreams makes every event stream send its last event and return.
func (d *demo) stopStreams() { d.stop.Do(func() { close(d.stopped) }) }

// work runs the workload: it enqueues cfg.jobs images, waits until each is
// acked or dead-lettered, and stops the consumer.
func (d *demo) work(ctx context.Context) error {
	if d.cfg.waitForViewer {
		select {
		case <-d.watched:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	d.mu.Lock()
	d.started = time.Now()
	d.mu.Unlock()

	c, err := d.q.Consume(ctx, d.handle,
		queue.WithWorkers(fetchWorkers),
		queue.WithLease(jobLease),
		queue.WithMaxAttempts(maxAttempts),
		queue.WithBackoff(backoff.Constant(retryDelay)),
	)
	if err != nil {
		return err
	}
	// The producer: it waits while the queue is full (Block), so the
	// consumer has started on the backlog long before the last enqueue.
	for n := range d.cfg.jobs {
		img := image{N: n, URL: fmt.Sprintf("https://images.example/%04d.jpg", n)}
		if _, err := d.q.Enqueue(ctx, img, queue.WithID(fmt.Sprintf("img-%04d", n))); err != nil {
			_, cerr := c.Close(context.WithoutCancel(ctx))
			return errors.Join(err, cerr)
		}
	}
	// Every job is enqueued: Drain returns once each one is acked or
	// dead-lettered (retries included), and closes the consumer.
	rep, err := c.Drain(ctx)
	if rep.Abandoned > 0 {
		err = errors.Join(err, fmt.Errorf("consumer: %d jobs left unsettled (abandoned)", rep.Abandoned))
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.took = time.Since(d.started)
	d.mu.Unlock()
	close(d.finished)
	return nil
}

var (
	errFetch   = errors.New("fetch: connection reset")
	errCorrupt = errors.New("decode: corrupt image")
)

// handle fetches an image and resizes it on the pool.
func (d *demo) handle(ctx context.Context, job queue.Job[image]) error {
	img := job.Payload
	if err := wait(ctx, fetchLatency); err != nil {
		return err
	}
	switch {
	case img.N%corruptEvery == corruptEvery-1:
		return retry.Permanent(errCorrupt)
	case img.N%flakyEvery == 0 && job.Attempt == 1:
		return errFetch
	}
	h, err := pool.Call(ctx, d.resize, func(ctx context.Context) ([sha256.Size]byte, error) {
		return resize(ctx, img)
	})
	if err != nil {
		return err
	}
	_, err = h.Wait(ctx)
	return err
}

// resize is the CPU step.
func resize(ctx context.Context, img image) ([sha256.Size]byte, error) {
	sum := sha256.Sum256([]byte(img.URL))
	for i := range resizeRounds {
		if i%250 == 0 && ctx.Err() != nil {
			return sum, context.Cause(ctx)
		}
		sum = sha256.Sum256(sum[:])
	}
	return sum, nil
}

// wait waits for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// snapshot is one event of the stream.
type snapshot struct {
	Jobs      int    `json:"jobs"`       // images in the workload
	ElapsedMS int64  `json:"elapsed_ms"` // since the workload started
	Done      bool   `json:"done"`       // every job is acked or dead-lettered
	Enqueued  uint64 `json:"enqueued"`
	Acked     uint64 `json:"acked"`
	Retried   uint64 `json:"retried"`
	Dead      uint64 `json:"dead"`
	Ready     int    `json:"ready"`
	InFlight  int    `json:"in_flight"`
	Delayed   int    `json:"delayed"` // waiting for a retry
	LagMS     int64  `json:"lag_ms"`  // age of the oldest stored job
	Pool      struct {
		Workers     int     `json:"workers"`
		Running     int     `json:"running"`
		Queued      int     `json:"queued"`
		Completed   uint64  `json:"completed"`
		Failed      uint64  `json:"failed"`
		QueueWaitMS float64 `json:"queue_wait_ms"` // mean
	} `json:"pool"`
}

func (d *demo) snapshot(ctx context.Context) (snapshot, error) {
	// Done is read before the counts: the workload's end happens before a
	// Stats that starts after it, so a done snapshot has the final counts.
	done := false
	select {
	case <-d.finished:
		done = true
	default:
	}
	st, err := d.q.Stats(ctx)
	if err != nil {
		return snapshot{}, err
	}
	ps := d.resize.Stats()
	s := snapshot{
		Jobs:     d.cfg.jobs,
		Enqueued: st.Enqueued,
		Acked:    st.Acked,
		Retried:  st.Retried,
		Dead:     st.DeadLetteredTotal(),
		Ready:    st.Ready,
		InFlight: st.InFlight,
		Delayed:  st.Delayed,
		LagMS:    st.Lag.Milliseconds(),
		Done:     done,
	}
	d.mu.Lock()
	switch {
	case s.Done:
		s.ElapsedMS = d.took.Milliseconds()
	case !d.started.IsZero():
		s.ElapsedMS = time.Since(d.started).Milliseconds()
	}
	d.mu.Unlock()
	s.Pool.Workers, s.Pool.Running, s.Pool.Queued = ps.Workers, ps.Running, ps.Queued
	s.Pool.Completed, s.Pool.Failed = ps.Completed, ps.Failed+ps.Panicked
	s.Pool.QueueWaitMS = float64(ps.Wait.Mean().Microseconds()) / 1000
	return s, nil
}

// summary is the final stats: one line, then one per dead letter.
func (d *demo) summary() string {
	ctx := context.Background()
	s, err := d.snapshot(ctx)
	if err != nil {
		return "stats: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "done in %v: jobs=%d acked=%d retried=%d dead=%d; pool: completed=%d failed=%d",
		time.Duration(s.ElapsedMS)*time.Millisecond, s.Jobs, s.Acked, s.Retried, s.Dead, s.Pool.Completed, s.Pool.Failed)
	for dl, err := range d.q.DeadLetters(ctx) { // oldest first
		if err != nil {
			return "dead letters: " + err.Error()
		}
		last := ""
		if n := len(dl.History); n > 0 {
			last = dl.History[n-1].Error
		}
		fmt.Fprintf(&b, "\ndead letter %s: %s after %d attempt(s): %s", dl.Job.ID, dl.Reason, dl.Job.Attempt, last)
	}
	return b.String()
}

func (d *demo) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = io.WriteString(w, page) // the viewer went away: nothing to do
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		s, err := d.snapshot(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc("GET /events", d.events)
	return mux
}

// events streams a snapshot every tick until the viewer leaves or the
// streams are stopped; a stopped stream sends the current snapshot last.
func (d *demo) events(w http.ResponseWriter, r *http.Request) {
	select {
	case d.viewers <- struct{}{}:
		defer func() { <-d.viewers }()
	default:
		http.Error(w, "too many viewers", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	t := time.NewTicker(d.cfg.tick)
	defer t.Stop()
	for last := false; ; {
		s, err := d.snapshot(r.Context())
		if err != nil {
			return // the viewer left
		}
		if err := sendEvent(rc, w, s); err != nil || last {
			return // the viewer left or stalled past writeTimeout, or that was the last event
		}
		// The first viewer saw the state before the workload: start it.
		d.watch.Do(func() { close(d.watched) })
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-d.stopped:
			last = true
		}
	}
}

// sendEvent writes s as one event and flushes it, within writeTimeout.
func sendEvent(rc *http.ResponseController, w io.Writer, s snapshot) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
		return err
	}
	return rc.Flush()
}

// page is the viewer: an EventSource on /events, no external assets.
const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width">
<title>corral live</title>
<style>
body { font: 15px system-ui, sans-serif; margin: 2em auto; max-width: 36em; }
progress { width: 100%; height: 1.5em; }
table { border-collapse: collapse; margin-top: 1em; }
td { padding: .2em 1.5em .2em 0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<h1>corral live</h1>
<progress id="bar" value="0" max="1"></progress>
<p id="state">connecting…</p>
<table>
<tr><th colspan="2">queue</th><th colspan="2">pool</th></tr>
<tr><td>acked</td><td class="n" id="acked"></td><td>workers</td><td class="n" id="workers"></td></tr>
<tr><td>retried</td><td class="n" id="retried"></td><td>running</td><td class="n" id="running"></td></tr>
<tr><td>dead</td><td class="n" id="dead"></td><td>queued</td><td class="n" id="queued"></td></tr>
<tr><td>ready</td><td class="n" id="ready"></td><td>completed</td><td class="n" id="completed"></td></tr>
<tr><td>in flight</td><td class="n" id="in_flight"></td><td>failed</td><td class="n" id="failed"></td></tr>
<tr><td>delayed</td><td class="n" id="delayed"></td><td>mean queue wait</td><td class="n" id="queue_wait_ms"></td></tr>
<tr><td>lag</td><td class="n" id="lag_ms"></td><td></td><td></td></tr>
</table>
<script>
const $ = id => document.getElementById(id);
const es = new EventSource("events");
es.onmessage = e => {
  const s = JSON.parse(e.data);
  for (const k of ["acked", "retried", "dead", "ready", "in_flight", "delayed"]) $(k).textContent = s[k];
  for (const k of ["workers", "running", "queued", "completed", "failed"]) $(k).textContent = s.pool[k];
  $("lag_ms").textContent = s.lag_ms + " ms";
  $("queue_wait_ms").textContent = s.pool.queue_wait_ms.toFixed(2) + " ms";
  $("bar").max = s.jobs;
  $("bar").value = s.acked + s.dead;
  $("state").textContent = (s.done ? "done: " : "running: ") + (s.acked + s.dead) + " of " + s.jobs +
    " jobs settled in " + (s.elapsed_ms / 1000).toFixed(1) + " s";
  if (s.done) es.close(); // nothing will change: do not reconnect
};
es.onerror = () => { $("state").textContent = "disconnected, reconnecting…"; };
</script>
</body>
</html>
`
