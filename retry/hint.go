package retry

import (
	"math"
	"strings"
	"time"
)

// httpDateLayouts are the three HTTP-date forms of RFC 9110 section 5.6.7: IMF-fixdate,
// then the obsolete RFC 850 and ANSI C asctime forms, which recipients must accept.
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseRetryAfter parses the value of an HTTP Retry-After header: either a non-negative
// number of seconds ("120") or an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT"), which is
// turned into a delay from now (pass time.Now(), or a fixed time in tests). A date in the
// past gives 0. It reports false for an empty or malformed value. A huge number of seconds
// saturates instead of overflowing; the retry loop clamps hints with [MaxHint].
//
//	if d, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
//		return retry.After(err, d)
//	}
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var secs uint64
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if secs < 1<<60 { // beyond this the value saturates anyway
				secs = secs*10 + uint64(c-'0')
			}
		}
		if secs > math.MaxInt64/uint64(time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	for _, layout := range httpDateLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}
