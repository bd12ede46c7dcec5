package retry_test

import (
	"math"
	"testing"
	"time"

	"github.com/corral-go/corral/retry"
)

// Regression (issue 14, item 17): HTTP dates follow RFC 9110 section 5.6.7 at their edges.
// An RFC 850 date's two-digit year was read with Go's fixed pivot (69 to 99 are 19xx)
// instead of relative to now, and a leap second, 23:59:60, was refused. A two-digit year
// is the latest year with those digits that is at most 50 years after now; 23:59:60 is the
// second before the next day's 00:00:00, and counts as that instant.
func TestParseRetryAfterDates(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
	}
	now := utc(2026, 10, 21, 7, 28, 0)
	for _, c := range []struct {
		now  time.Time
		in   string
		want time.Time // the date; one before now gives a delay of 0
	}{
		// IMF-fixdate.
		{now, "Wed, 21 Oct 2026 07:28:30 GMT", utc(2026, 10, 21, 7, 28, 30)},
		{now, "Thu, 01 Jan 1970 00:00:00 GMT", utc(1970, 1, 1, 0, 0, 0)},
		{now, "Sat, 01 Jan 0000 00:00:00 GMT", utc(0, 1, 1, 0, 0, 0)},
		{now, "Fri, 31 Dec 9999 23:59:59 GMT", utc(9999, 12, 31, 23, 59, 59)},
		{utc(2026, 12, 31, 23, 59, 0), "Thu, 31 Dec 2026 23:59:60 GMT", utc(2027, 1, 1, 0, 0, 0)},
		{utc(2026, 6, 30, 23, 59, 0), "Tue, 30 Jun 2026 23:59:60 GMT", utc(2026, 7, 1, 0, 0, 0)},
		{now, "Tue, 29 Feb 2028 07:28:30 GMT", utc(2028, 2, 29, 7, 28, 30)},

		// RFC 850: the two-digit year is read relative to now.
		{now, "Wednesday, 21-Oct-26 07:29:00 GMT", utc(2026, 10, 21, 7, 29, 0)},
		{now, "Sunday, 21-Oct-68 07:28:00 GMT", utc(2068, 10, 21, 7, 28, 0)},
		{now, "Monday, 21-Oct-69 07:28:00 GMT", utc(2069, 10, 21, 7, 28, 0)},
		{now, "Friday, 21-Oct-70 07:28:00 GMT", utc(2070, 10, 21, 7, 28, 0)},
		{now, "Wednesday, 21-Oct-76 07:28:00 GMT", utc(2076, 10, 21, 7, 28, 0)}, // exactly 50 years ahead
		{now, "Thursday, 21-Oct-76 07:28:01 GMT", utc(1976, 10, 21, 7, 28, 1)},  // more: the last century
		{now, "Thursday, 31-Dec-99 23:59:59 GMT", utc(1999, 12, 31, 23, 59, 59)},
		{now, "Saturday, 01-Jan-00 00:00:00 GMT", utc(2000, 1, 1, 0, 0, 0)},
		{utc(2080, 1, 1, 0, 0, 0), "Thursday, 31-Dec-99 23:59:59 GMT", utc(2099, 12, 31, 23, 59, 59)},
		{utc(2080, 1, 1, 0, 0, 0), "Wednesday, 01-Jan-20 00:00:00 GMT", utc(2120, 1, 1, 0, 0, 0)},
		{utc(2080, 1, 1, 0, 0, 0), "Tuesday, 01-Jan-30 00:00:00 GMT", utc(2130, 1, 1, 0, 0, 0)},      // exactly 50 years ahead
		{utc(2079, 12, 31, 23, 59, 59), "Tuesday, 01-Jan-30 00:00:00 GMT", utc(2030, 1, 1, 0, 0, 0)}, // a second more
		{utc(2099, 6, 1, 0, 0, 0), "Friday, 01-Jan-00 00:00:00 GMT", utc(2100, 1, 1, 0, 0, 0)},
		{now, "Tuesday, 29-Feb-00 00:00:00 GMT", utc(2000, 2, 29, 0, 0, 0)},
		{utc(2026, 12, 31, 23, 59, 0), "Thursday, 31-Dec-26 23:59:60 GMT", utc(2027, 1, 1, 0, 0, 0)},
		{utc(2026, 12, 31, 23, 59, 59), "Friday, 31-Dec-76 23:59:60 GMT", utc(1977, 1, 1, 0, 0, 0)}, // a second over 50 years
		{utc(2027, 1, 1, 0, 0, 0), "Thursday, 31-Dec-76 23:59:60 GMT", utc(2077, 1, 1, 0, 0, 0)},    // exactly 50 years

		// ANSI C asctime.
		{now, "Wed Oct 21 07:28:05 2026", utc(2026, 10, 21, 7, 28, 5)},
		{utc(2026, 10, 1, 7, 27, 0), "Thu Oct  1 07:28:00 2026", utc(2026, 10, 1, 7, 28, 0)},
		{utc(2026, 12, 31, 23, 59, 0), "Thu Dec 31 23:59:60 2026", utc(2027, 1, 1, 0, 0, 0)},
	} {
		got, ok := retry.ParseRetryAfter(c.in, c.now)
		check(t, ok, "%q: not parsed", c.in)
		equal(t, max(c.want.Sub(c.now), 0), got, "%q at %v", c.in, c.now) // Sub saturates, as the parser must
	}
	for _, c := range []struct {
		now time.Time
		in  string
	}{
		{now, "Thu, 31 Dec 2026 23:58:60 GMT"}, // 60 is a second only at 23:59
		{now, "Thu, 31 Dec 2026 12:00:60 GMT"},
		{now, "Thu, 31 Dec 2026 23:59:61 GMT"},
		{now, "Thu, 31 Dec 2026 24:00:00 GMT"},
		{now, "Thu, 31 Dec 2026 23:60:00 GMT"},
		{now, "Wed, 32 Oct 2026 07:28:30 GMT"},
		{now, "Thu, 29 Feb 2026 07:28:30 GMT"},
		{utc(2060, 1, 1, 0, 0, 0), "Monday, 29-Feb-00 00:00:00 GMT"}, // 2100 has no Feb 29
		{now, "Thursday, 31-Dec-26 23:58:60 GMT"},
		{now, "Thu Dec 31 23:58:60 2026"},
	} {
		got, ok := retry.ParseRetryAfter(c.in, c.now)
		check(t, !ok, "%q: parsed as %v, want malformed", c.in, got)
	}
	equal(t, time.Duration(math.MaxInt64), must(retry.ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now)), "saturates")
}

func must(d time.Duration, ok bool) time.Duration {
	if !ok {
		panic("not parsed")
	}
	return d
}
