package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
)

// Console is an http.Handler for operators: it shows the queues it was given and drives the
// operator's verbs on them. Make one with [New]; it samples the queues' Stats on a goroutine
// of its own, which [Console.Close] stops: the owner of a Console closes it once the server
// that serves it is shut down. A Console is safe for concurrent use.
type Console struct {
	srcs   []Source
	byName map[string]*Source
	o      options
	mux    *http.ServeMux
	tmpl   *template.Template

	hub hub // the live updates

	stop    context.CancelFunc
	sampled sync.WaitGroup // the sampler, which Close waits for
}

// Action is an operator's action, as the authorization hook sees it (see [WithAuthorize]).
type Action struct {
	// Verb is one of "pause", "resume", "cancel", "redrive", "purge", "cancel-all",
	// "redrive-all", "purge-all".
	Verb string
	// Queue is the name of the queue it acts on.
	Queue string
	// ID is the job of a single-job verb ("" for the others).
	ID string
}

// Option configures a Console.
type Option interface{ apply(*options) }

type options struct {
	readOnly  bool
	authorize func(*http.Request, Action) error
	interval  time.Duration
	shares    []namedShare
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithReadOnly makes a console that shows and accepts no action: its pages have no buttons,
// and every POST is refused with 403 Forbidden.
func WithReadOnly() Option { return optionFunc(func(o *options) { o.readOnly = true }) }

// WithAuthorize sets a hook called for every action before it runs, with the request (whose
// context carries what the user's middleware put there) and the action: a non-nil error
// refuses it with 403 Forbidden and the error's text. It is called concurrently.
func WithAuthorize(f func(r *http.Request, a Action) error) Option {
	if f == nil {
		panic("console: WithAuthorize(nil)")
	}
	return optionFunc(func(o *options) { o.authorize = f })
}

// WithInterval sets how often the console samples its queues' Stats for the live updates and
// the charts (1s by default). It panics if d is not positive.
func WithInterval(d time.Duration) Option {
	if d <= 0 {
		panic("console: WithInterval(" + d.String() + "): need a positive interval")
	}
	return optionFunc(func(o *options) { o.interval = d })
}

// WithShare shows the Share sh on the overview under name: each of its members (the consumers
// started with queue.WithShare) with its weight, workers, jobs in flight and waiting, the
// turns it was given (jobs started), its share of the busy time, and its queue's depth and
// lag, as [queue.Share.Stats] reports them. A member that joins after the page was loaded
// appears when the page is reloaded. Give one WithShare per Share; it panics if name is empty
// or sh is nil, and New panics if two Shares have one name.
func WithShare(name string, sh *queue.Share) Option {
	if name == "" || sh == nil {
		panic("console: WithShare needs a name and a Share")
	}
	return optionFunc(func(o *options) { o.shares = append(o.shares, namedShare{name: name, sh: sh}) })
}

//go:embed static templates
var files embed.FS

// New returns a console of the queues srcs, sampling them until Close. Serve it under any
// path: mounted under a prefix with http.StripPrefix, its links and forms keep to the prefix.
// It panics if two sources have one name, or an option is nil.
func New(srcs []Source, opts ...Option) *Console {
	o := options{interval: time.Second}
	for _, opt := range opts {
		if opt == nil {
			panic("console: nil option")
		}
		opt.apply(&o)
	}
	c := &Console{srcs: srcs, byName: make(map[string]*Source, len(srcs)), o: o}
	for i := range c.srcs {
		s := &c.srcs[i]
		if s.q == nil {
			panic("console: a zero Source: use console.Of")
		}
		if c.byName[s.name] != nil {
			panic("console: two queues named " + s.name)
		}
		c.byName[s.name] = s
	}
	for i, sh := range o.shares {
		for _, other := range o.shares[:i] {
			if other.name == sh.name {
				panic("console: two Shares named " + sh.name)
			}
		}
	}
	c.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/*.html"))
	c.hub.init(len(srcs))
	static, _ := fs.Sub(files, "static")
	c.mux = http.NewServeMux()
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /events", c.events)
	c.mux.HandleFunc("GET /queues/{queue}", c.list)
	c.mux.HandleFunc("GET /queues/{queue}/jobs/{id}", c.job)
	c.mux.HandleFunc("POST /queues/{queue}/actions", c.act)
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.sampled.Go(func() { c.sample(ctx) })
	return c
}

// Close stops the sampler and ends the live updates (each open event stream returns), and
// waits for the sampler. It is idempotent.
func (c *Console) Close() {
	c.stop()
	c.sampled.Wait()
	c.hub.close()
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// base returns the path the console is mounted at, ending in "/": the request's path as the
// client sent it, less the path the console sees (http.StripPrefix removed the prefix).
func base(r *http.Request) string {
	orig := r.URL.Path
	if u := r.RequestURI; u != "" {
		orig, _, _ = strings.Cut(u, "?")
	}
	p := strings.TrimSuffix(orig, r.URL.EscapedPath())
	return strings.TrimSuffix(p, "/") + "/"
}

// The CSRF protection: a random token in a cookie (SameSite=Strict, HttpOnly) that every form
// repeats in a hidden field; an action whose field does not match the cookie is refused.
const csrfCookie = "corral_console_csrf"

// csrfToken returns the request's token, setting a new cookie if it has none.
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 32 {
		return ck.Value
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: base(r), HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	return tok
}

var errCSRF = errors.New("console: missing or wrong CSRF token: reload the page")

// checkCSRF reports whether the form's token matches the cookie's.
func checkCSRF(r *http.Request) error {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return errCSRF
	}
	if subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		return errCSRF
	}
	return nil
}

// source returns the queue the request names, or writes 404.
func (c *Console) source(w http.ResponseWriter, r *http.Request) *Source {
	s := c.byName[r.PathValue("queue")]
	if s == nil {
		http.Error(w, "console: no such queue", http.StatusNotFound)
	}
	return s
}
