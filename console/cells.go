package console

import (
	"context"
	"strconv"
	"time"

	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/queue"
)

// The overview's cells. The page and the live updates write the same text in a cell: both take
// it from fields, keyed by the cell's data-field name, so that what the page shows when it is
// loaded and what a snapshot writes into it later read alike.

// notTimed is the text of a queue's timings when its consumers in this process have timed no
// handler run yet (they time a sample of the runs, or every run with queue.WithTimings).
const notTimed = "none yet"

// percentiles are the quantiles the overview shows, with their cells' suffixes.
var percentiles = [...]struct {
	q    float64
	name string
}{{0.50, "P50"}, {0.95, "P95"}, {0.99, "P99"}}

// The cells of the overview's tables, in their columns' order.
var (
	timingFields = []string{"runs", "waitP50", "waitP95", "waitP99", "runP50", "runP95", "runP99"}
	healthFields = []string{"reachable", "since", "paused", "inFlight", "backendErrors", "reconnects", "losses", "lastError"}
	memberFields = []string{"weight", "workers", "running", "waiting", "started", "busy", "share", "depth", "lag"}
)

// fields returns the cells of a queue's rows: its gauges and counters, its wait and run time
// percentiles, and its consumers' health, as this process sees them.
func fields(st *queue.Stats) map[string]string {
	paused := "running"
	if st.Paused {
		paused = "paused"
	}
	reachable := "reachable"
	if !st.Health.Reachable {
		reachable = "unreachable"
	}
	lastErr := ""
	if st.Health.LastError != nil {
		lastErr = st.Health.LastError.Error() + " (" + when(st.Health.LastErrorAt) + ")"
	}
	f := map[string]string{
		"ready": itoa(st.Ready), "inFlight": itoa(st.InFlight), "delayed": itoa(st.Delayed), "dead": itoa(st.Dead),
		"lag": short(st.Lag), "paused": paused,
		"enqueued": utoa(st.Enqueued), "acked": utoa(st.Acked), "retried": utoa(st.Retried),
		"deadLettered": utoa(st.DeadLetteredTotal()),
		"reachable":    reachable, "since": when(st.Health.Since), "reconnects": utoa(st.Health.Reconnects), "losses": utoa(st.Health.Losses),
		"backendErrors": utoa(st.BackendErrors), "lastError": lastErr,
		"runs": utoa(st.Run.Count),
	}
	if st.Run.Count == 0 {
		f["runs"] = notTimed
	}
	quantiles(f, "wait", st.Wait)
	quantiles(f, "run", st.Run)
	return f
}

// quantiles sets f's cells prefix+"P50" and so on to h's percentiles, or "–" if h is empty.
func quantiles(f map[string]string, prefix string, h latency.Histogram) {
	for _, p := range percentiles {
		v := "–"
		if h.Count > 0 {
			v = short(h.Quantile(p.q))
		}
		f[prefix+p.name] = v
	}
}

// shareView is a Share as the overview shows it: its members (the consumers that share its
// workers) with their cells, or the error reading them.
type shareView struct {
	Name    string      `json:"name"`
	Members []memberRow `json:"members"`
	Error   string      `json:"error,omitempty"`
}

type memberRow struct {
	Name   string            `json:"name"`
	Fields map[string]string `json:"fields"`
}

// namedShare is a Share given to WithShare.
type namedShare struct {
	name string
	sh   *queue.Share
}

// read returns the Share's members and their cells, read now with ctx.
func (s namedShare) read(ctx context.Context) shareView {
	members, err := s.sh.Stats(ctx)
	v := shareView{Name: s.name, Members: make([]memberRow, len(members))}
	if err != nil {
		v.Error = err.Error()
	}
	for i := range members {
		m := &members[i]
		v.Members[i] = memberRow{Name: m.Name, Fields: map[string]string{
			"weight": itoa(m.Weight), "workers": itoa(m.Cap), "running": itoa(m.Running), "waiting": itoa(m.Waiting),
			"started": utoa(m.Turns), "busy": short(m.Busy), "share": strconv.FormatFloat(100*m.Share, 'f', 1, 64) + "%",
			"depth": itoa(m.Depth), "lag": short(m.Lag),
		}}
	}
	return v
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

// when formats an instant for the pages: UTC, to the millisecond; "" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

// short formats a duration with about four significant digits: to the millisecond from a
// second up, to the microsecond from a millisecond up, exactly below.
func short(d time.Duration) string {
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
