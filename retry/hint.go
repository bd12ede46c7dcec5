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
	rfc850,
	"Mon Jan _2 15:04:05 2006",
}

const rfc850 = "Monday, 02-Jan-06 15:04:05 GMT"

// ParseRetryAfter parses the value of an HTTP Retry-After header: either a non-negative
// number of seconds ("120") or an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT"), which is
// turned into a delay from now (pass time.Now(), or a fixed time in tests). A date in the
// past gives 0. It reports false for an empty or malformed value. A huge number of seconds,
// or a date too far ahead for a time.Duration, saturates instead of overflowing; the retry
// loop clamps hints with [WithMaxHint].
//
// Dates are read as RFC 9110 section 5.6.7 says. All three forms are accepted: IMF-fixdate,
// and the obsolete RFC 850 and ANSI C asctime forms. The two-digit year of an RFC 850 date
// is the latest year ending in those digits that puts the date at most 50 years after now,
// so a date that would be more than 50 years ahead is one of the previous century. The
// seconds may be 60 at 23:59, a leap second, which counts as the next day's 00:00:00 (a
// time.Time has no leap seconds); 60 at any other minute is malformed, and so is a date
// that does not exist (a February 29 in the year so chosen that is not a leap year).
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
	if t, ok := parseHTTPDate(v, now); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// parseHTTPDate parses v in any of the three HTTP-date forms, with the RFC 850 year and the
// leap second read as ParseRetryAfter says.
func parseHTTPDate(v string, now time.Time) (time.Time, bool) {
	// The time of day is the only place with colons in every form; time.Parse refuses a
	// 60th second, so a leap second is parsed as 23:59:59 and moved on by one.
	leap := false
	if i := strings.LastIndexByte(v, ':'); i >= 5 && i+3 <= len(v) && v[i-5:i+3] == "23:59:60" {
		v, leap = v[:i+1]+"59"+v[i+3:], true
	}
	for _, layout := range httpDateLayouts {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		if layout == rfc850 {
			limit := now.AddDate(50, 0, 0)
			if leap {
				limit = limit.Add(-time.Second) // the date is a second after t
			}
			var ok bool
			if t, ok = rfc850Century(t, limit); !ok {
				return time.Time{}, false
			}
		}
		if leap {
			t = t.Add(time.Second)
		}
		return t, true
	}
	return time.Time{}, false
}

// rfc850Century returns t, parsed from a two-digit year, moved to the latest year with the
// same last two digits that puts it no later than limit (time.Parse reads 69 to 99 as 19xx
// and 00 to 68 as 20xx whatever the date). It reports false if t's day does not exist in
// that year (February 29 of 00 in a century that is not a leap year).
func rfc850Century(t, limit time.Time) (time.Time, bool) {
	limit = limit.UTC()
	date := func(y int) time.Time {
		return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	}
	y := limit.Year() - ((limit.Year()-t.Year())%100+100)%100 // the latest such year <= limit's
	c := date(y)
	if c.After(limit) {
		c = date(y - 100)
	}
	return c, c.Day() == t.Day()
}
