package console

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Live updates. The sampler reads every queue's Stats each interval, keeps the last
// historyLen samples (the charts' data), and publishes one JSON snapshot to every client of
// the event stream (Server-Sent Events).
//
// Each client has a buffer of clientBuffer snapshots. A client too slow to take them (its
// buffer is full when a snapshot comes) misses that snapshot, which is counted in the next one
// it gets (Dropped); every snapshot holds the whole state, so the page is right again with
// the next. A client that missed clientBuffer snapshots in a row is disconnected (its
// EventSource reconnects when it can): a stuck client costs at most its buffer.

const (
	historyLen   = 120
	clientBuffer = 8
)

// point is one sample of a queue, for the charts.
type point struct {
	At       int64   `json:"at"` // Unix ms
	Acked    float64 `json:"acked"`
	Failed   float64 `json:"failed"`
	Ready    int     `json:"ready"`
	InFlight int     `json:"inFlight"`
}

// snapshot is what a client gets: every queue's state and history.
type snapshot struct {
	At      int64        `json:"at"` // when it was sampled, Unix ms
	Queues  []queueState `json:"queues"`
	Shares  []shareView  `json:"shares"`
	Dropped int          `json:"dropped"` // snapshots this client missed (see above)
}

type queueState struct {
	Name     string  `json:"name"`
	Ready    int     `json:"ready"`
	InFlight int     `json:"inFlight"`
	Delayed  int     `json:"delayed"`
	Dead     int     `json:"dead"`
	LagMs    int64   `json:"lagMs"`
	Paused   bool    `json:"paused"`
	Acked    uint64  `json:"acked"`
	Retried  uint64  `json:"retried"`
	DeadTot  uint64  `json:"deadLettered"`
	Enqueued uint64  `json:"enqueued"`
	Error    string  `json:"error,omitempty"`
	History  []point `json:"history"`
	// Fields are the overview's cells of the queue, by data-field name (see fields).
	Fields map[string]string `json:"fields"`
}

// hub holds the history and the clients.
type hub struct {
	mu      sync.Mutex // guards the fields below
	last    []queueState
	shares  []shareView
	at      time.Time // when last was sampled
	clients map[*client]struct{}
	closed  bool
}

type client struct {
	ch      chan []byte // buffered: clientBuffer
	missed  int         // snapshots missed in a row; guarded by hub.mu
	dropped int         // snapshots missed since the last one sent; guarded by hub.mu
	gone    chan struct{}
}

func (h *hub) init(n int) {
	h.last = make([]queueState, n)
	h.clients = make(map[*client]struct{})
}

// sample reads the queues every interval until ctx ends.
func (c *Console) sample(ctx context.Context) {
	t := time.NewTicker(c.o.interval)
	defer t.Stop()
	for {
		c.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Console) sampleOnce(ctx context.Context) {
	now := time.Now()
	states := make([]queueState, len(c.srcs))
	for i := range c.srcs {
		st, err := c.srcs[i].q.Stats(ctx)
		qs := queueState{Name: c.srcs[i].name, Ready: st.Ready, InFlight: st.InFlight, Delayed: st.Delayed,
			Dead: st.Dead, LagMs: st.Lag.Milliseconds(), Paused: st.Paused, Acked: st.Acked, Retried: st.Retried,
			DeadTot: st.DeadLetteredTotal(), Enqueued: st.Enqueued, Fields: fields(&st)}
		if err != nil {
			qs.Error = err.Error()
		}
		states[i] = qs
	}
	shares := make([]shareView, len(c.o.shares))
	for i, sh := range c.o.shares {
		shares[i] = sh.read(ctx)
	}
	c.hub.publish(now, c.o.interval, states, shares)
}

// publish records states and shares, sampled at now, and sends the snapshot to every client.
func (h *hub) publish(now time.Time, every time.Duration, states []queueState, shares []shareView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range states {
		prev := &h.last[i]
		p := point{At: now.UnixMilli(), Ready: states[i].Ready, InFlight: states[i].InFlight}
		if len(prev.History) > 0 {
			secs := every.Seconds()
			p.Acked = float64(states[i].Acked-prev.Acked) / secs
			p.Failed = float64(states[i].Retried+states[i].DeadTot-prev.Retried-prev.DeadTot) / secs
		}
		hist := append(prev.History, p)
		if len(hist) > historyLen {
			hist = append(hist[:0:0], hist[len(hist)-historyLen:]...)
		}
		states[i].History = hist
	}
	h.last, h.shares, h.at = states, shares, now
	for cl := range h.clients {
		h.sendLocked(cl)
	}
}

// sendLocked sends the latest snapshot to cl, or counts it missed (see above). h.mu held.
func (h *hub) sendLocked(cl *client) {
	b, err := json.Marshal(snapshot{At: h.at.UnixMilli(), Queues: h.last, Shares: h.shares, Dropped: cl.dropped})
	if err != nil {
		return
	}
	select {
	case cl.ch <- b:
		cl.missed, cl.dropped = 0, 0
	default:
		cl.missed++
		cl.dropped++
		if cl.missed >= clientBuffer {
			h.dropLocked(cl)
		}
	}
}

func (h *hub) dropLocked(cl *client) {
	if _, ok := h.clients[cl]; ok {
		delete(h.clients, cl)
		close(cl.gone)
	}
}

// join adds a client and sends it the latest snapshot; nil once the hub is closed.
func (h *hub) join() *client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	cl := &client{ch: make(chan []byte, clientBuffer), gone: make(chan struct{})}
	h.clients[cl] = struct{}{}
	h.sendLocked(cl)
	return cl
}

func (h *hub) leave(cl *client) {
	h.mu.Lock()
	h.dropLocked(cl)
	h.mu.Unlock()
}

// close disconnects every client.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for cl := range h.clients {
		h.dropLocked(cl)
	}
}

// events serves the event stream: a snapshot per sample, until the client leaves, is
// disconnected (see above) or the console is closed.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	cl := c.hub.join()
	if cl == nil {
		http.Error(w, "console: closed", http.StatusServiceUnavailable)
		return
	}
	defer c.hub.leave(cl)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	for {
		select {
		case b := <-cl.ch:
			if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-cl.gone:
			return
		case <-r.Context().Done():
			return
		}
	}
}
