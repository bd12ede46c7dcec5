package memory

import (
	"time"
)

// uniques holds the unique keys (driver.Message.Unique): the key of a stored
// job, held by it, and the key of a job that left, held until its period
// ends. m.mu guards it.
type uniques struct {
	held map[string]uniqueHold
	// pruneAt is the size of held at which the next hold drops the keys
	// whose period ended: twice the size left by the last pruning, so that
	// pruning costs O(1) per hold, amortized.
	pruneAt int
}

// uniqueHold is a unique key's holder: its ID, and when the key is free
// again (zero while the job is stored).
type uniqueHold struct {
	id    string
	until time.Time
}

// holder returns the ID of the job holding key at now, if one does.
func (u *uniques) holder(key string, now time.Time) (string, bool) {
	h, ok := u.held[key]
	if !ok || !h.until.IsZero() && !now.Before(h.until) {
		return "", false
	}
	return h.id, true
}

// hold records that the stored job id holds key.
func (u *uniques) hold(key, id string, now time.Time) {
	if u.held == nil {
		u.held = make(map[string]uniqueHold)
	}
	if len(u.held) >= u.pruneAt {
		for k, h := range u.held {
			if !h.until.IsZero() && !now.Before(h.until) {
				delete(u.held, k)
			}
		}
		u.pruneAt = max(2*len(u.held), 64)
	}
	u.held[key] = uniqueHold{id: id}
}

// leave records that the job id, which held key for period once it left,
// left at now: the key stays held for its period, if it has one.
func (u *uniques) leave(key, id string, period time.Duration, now time.Time) {
	if h, ok := u.held[key]; !ok || h.id != id || !h.until.IsZero() {
		return // not this job's (a key no job holds now)
	}
	if period <= 0 {
		delete(u.held, key)
		return
	}
	u.held[key] = uniqueHold{id: id, until: now.Add(period)}
}
