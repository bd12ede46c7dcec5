package backoff

import "time"

// FlatAt exposes, for tests, the first attempt from which the un-jittered delay stays flat,
// and that delay (the cap, or the base of a schedule that never grows).
func FlatAt(p Schedule) (int, time.Duration) { return p.flatAt, p.flat }
