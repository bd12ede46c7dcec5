// Package console is an http.Handler for the people who operate corral queues: an overview of
// every queue (depth by state, lag, counters, wait and run time percentiles, its consumers'
// health, each Share's split by consumer, throughput and failures over time as charts),
// job lists per state with filters and paging, a page per job with its history and errors,
// the dead letters with their reasons, and the operator's actions (pause, resume, cancel,
// redrive, purge; per job or in bulk by filter, each confirmed), live over Server-Sent Events.
//
//	c := console.New([]console.Source{console.Of("emails", emails), console.Of("billing", billing)})
//	defer c.Close()
//	http.Handle("/ops/", http.StripPrefix("/ops", authMiddleware(c)))
//
// Guarantees:
//   - Actions are POST only, and carry a CSRF token (a SameSite=Strict cookie that every form
//     repeats); one without it is refused with 403 Forbidden, as is every action of a console
//     made WithReadOnly, whose pages show no action at all.
//   - WithAuthorize's hook is called for every action, with the request, before it runs: the
//     console fits behind the user's own authentication middleware.
//   - Mounted under a prefix (http.StripPrefix), its links and forms keep to the prefix.
//   - Each client of the live updates has a bounded buffer; a slow client misses snapshots
//     (each is complete, so the next one corrects the page) and is disconnected after a
//     buffer's worth in a row. Nothing grows with a slow client.
//   - The overview's numbers are the queues' Stats (and each Share's Stats, given with
//     WithShare) read when the page is made, then at each sample: the page and the live
//     updates write the same text. Wait and run time percentiles are those of the handler runs
//     of this process's consumers: of a sample of about one run in 64, or of every run for a
//     queue made with queue.WithTimings (or a success, retry or dead hook); beside them, the
//     number of runs timed, or "none yet".
//   - The console owns one goroutine, its sampler, which Close stops and waits for.
//   - The page's HTML, CSS and script are this package's own, embedded, readable without a
//     build step.
//
// The console calls the queue's operator verbs (queue.Queue.Jobs, Inspect, Cancel, Pause,
// ...), which need a backend that implements driver.Admin. It lives in its own module, so that
// the core module stays free of it.
package console

// Where things are: console.go holds Console, New, its options, routing, the mount prefix and
// the CSRF token; source.go Source and Of (a typed queue seen without its type); pages.go the
// pages (overview, job list, job); cells.go the overview's cells (one text for the page and the
// live updates) and the Shares' rows; actions.go the actions; events.go the sampler and the live
// updates; templates/ and static/ the embedded HTML, CSS and script. internal/browsertest holds
// the browser scenarios the tests run in headless Chromium, on the in-memory backend here and on
// JetStream, Postgres and Redis in internal/brokers (a test module of its own).
