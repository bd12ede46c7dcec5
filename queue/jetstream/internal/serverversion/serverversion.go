// Package serverversion compares nats-server version strings, for the
// backend's check at Open and for the tests that skip a capability.
package serverversion

import (
	"regexp"
	"strconv"
)

var semver = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// AtLeast reports whether the server version v ("2.10.7", "v2.11.0-beta")
// is at least major.minor.patch. A version it cannot read is not.
func AtLeast(v string, major, minor, patch int) bool {
	m := semver.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	want := [3]int{major, minor, patch}
	for i := range want {
		n, _ := strconv.Atoi(m[i+1])
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}
