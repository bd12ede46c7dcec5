package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/corral-go/corral/queue"
)

// act runs an action (POST only): the CSRF token is checked first, then read-only mode, then
// the authorization hook; the action's outcome is shown on the page it redirects to.
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := checkCSRF(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if c.o.readOnly {
		http.Error(w, "console: read-only", http.StatusForbidden)
		return
	}
	s := c.source(w, r)
	if s == nil {
		return
	}
	a := Action{Verb: r.PostFormValue("verb"), Queue: s.name, ID: r.PostFormValue("id")}
	if c.o.authorize != nil {
		if err := c.o.authorize(r, a); err != nil {
			http.Error(w, "console: not authorized: "+err.Error(), http.StatusForbidden)
			return
		}
	}
	f, err := filterOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.Cursor = ""
	msg, err := run(r.Context(), s.q, a, f)
	if err != nil {
		http.Error(w, "console: "+a.Verb+": "+err.Error(), http.StatusConflict)
		return
	}
	back := r.PostFormValue("back")
	if back == "" || back[0] == '/' || len(back) > 1 && back[1] == '/' {
		back = "" // only a path relative to the console
	}
	http.Redirect(w, r, base(r)+back+sep(back)+"msg="+url.QueryEscape(msg), http.StatusSeeOther)
}

func sep(u string) string {
	for i := range len(u) {
		if u[i] == '?' {
			return "&"
		}
	}
	return "?"
}

// run runs action a on q with the filter f of a bulk verb, and says what it did.
func run(ctx context.Context, q verbs, a Action, f queue.Filter) (string, error) {
	var (
		n   int
		err error
	)
	switch a.Verb {
	case "pause":
		return "paused " + a.Queue, q.Pause(ctx)
	case "resume":
		return "resumed " + a.Queue, q.Resume(ctx)
	case "cancel":
		return "cancelled " + a.ID, q.Cancel(ctx, a.ID)
	case "redrive":
		return "redriven " + a.ID, q.Redrive(ctx, a.ID)
	case "purge":
		return "purged " + a.ID, q.Purge(ctx, a.ID)
	case "cancel-all":
		n, err = q.CancelAll(ctx, f)
	case "redrive-all":
		n, err = q.RedriveAll(ctx, f)
	case "purge-all":
		n, err = q.PurgeAll(ctx, f)
	default:
		return "", fmt.Errorf("unknown action %q", a.Verb)
	}
	return fmt.Sprintf("%s: %d jobs", a.Verb, n), err
}
