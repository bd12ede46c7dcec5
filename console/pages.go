package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when": when,
	// the overview's columns (see cells.go)
	"timingFields": func() []string { return timingFields },
	"healthFields": func() []string { return healthFields },
	"memberFields": func() []string { return memberFields },
	"notTimed":     func() string { return notTimed },
	// path escapes a queue name or job ID for a path segment: an ID may hold '/' or '?'.
	"path": url.PathEscape,
	// dict makes a map of its pairs of arguments, for a template called with several values.
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, errors.New("console: dict needs pairs")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, errors.New("console: dict keys are strings")
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
	"states": func() []queue.State {
		return []queue.State{queue.StateReady, queue.StateDelayed, queue.StateInFlight, queue.StateAwaitingVersion, queue.StateDead}
	},
	"lastError": func(h []queue.Attempt) string {
		if len(h) == 0 {
			return ""
		}
		return h[len(h)-1].Error
	},
}

// view is what every page's template gets.
type view struct {
	Base     string
	CSRF     string
	ReadOnly bool
	Queues   []queueView
	Shares   []shareView
	Queue    string
	Filter   queue.Filter
	Page     page
	Job      job
	Message  string
	Next     string // the URL of the next page
	Rendered int64  // when the page was made, Unix ms: the script skips older snapshots
}

type queueView struct {
	Name   string
	Stats  queue.Stats
	Fields map[string]string // the overview's cells (see fields)
	Err    error
}

func (c *Console) view(w http.ResponseWriter, r *http.Request) view {
	return view{Base: base(r), CSRF: csrfToken(w, r), ReadOnly: c.o.readOnly, Message: r.URL.Query().Get("msg"),
		Rendered: time.Now().UnixMilli()}
}

func (c *Console) render(w http.ResponseWriter, name string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := c.tmpl.ExecuteTemplate(w, name, v); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
	}
}

// overview shows every queue's gauges, counters, timings and health and every Share's
// members, read now, and the charts.
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	v := c.view(w, r)
	for i := range c.srcs {
		s := &c.srcs[i]
		st, err := s.q.Stats(r.Context())
		v.Queues = append(v.Queues, queueView{Name: s.name, Stats: st, Fields: fields(&st), Err: err})
	}
	for _, sh := range c.o.shares {
		v.Shares = append(v.Shares, sh.read(r.Context()))
	}
	c.render(w, "overview.html", v)
}

// filterOf reads a Filter from the query of r.
func filterOf(r *http.Request) (queue.Filter, error) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	f := queue.Filter{State: queue.State(q.Get("state")), IDPrefix: q.Get("prefix"), Key: q.Get("key"),
		Reason: queue.Reason(q.Get("reason")), Cursor: q.Get("cursor")}
	if s := q.Get("older"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return f, fmt.Errorf("console: older than %q: %w", s, err)
		}
		f.OlderThan = d
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return f, fmt.Errorf("console: page size %q: %w", s, err)
		}
		f.Limit = n
	}
	return f, nil
}

// list shows a page of a queue's jobs.
func (c *Console) list(w http.ResponseWriter, r *http.Request) {
	s := c.source(w, r)
	if s == nil {
		return
	}
	f, err := filterOf(r)
	if err == nil && f.State == "" {
		f.State = queue.StateReady
	}
	var p page
	if err == nil {
		p, err = s.q.jobs(r.Context(), f)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v := c.view(w, r)
	v.Queue, v.Filter, v.Page = s.name, f, p
	if p.Next != "" {
		q := r.URL.Query()
		q.Set("cursor", p.Next)
		v.Next = "queues/" + url.PathEscape(s.name) + "?" + q.Encode()
	}
	c.render(w, "list.html", v)
}

// job shows one job: its state, payload and history.
func (c *Console) job(w http.ResponseWriter, r *http.Request) {
	s := c.source(w, r)
	if s == nil {
		return
	}
	j, err := s.q.inspect(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, queue.ErrNoJob):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	v := c.view(w, r)
	v.Queue, v.Job = s.name, j
	c.render(w, "job.html", v)
}
