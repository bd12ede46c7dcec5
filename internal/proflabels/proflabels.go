// Package proflabels reads the pprof labels of goroutines from a goroutine profile, for the
// tests that check which labels corral's goroutines carry (runtime/pprof offers no way to read
// a goroutine's labels directly).
package proflabels

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
)

// Of returns the labels, as the goroutine profile prints them ({"key":"value", ...}, or "" for
// none), of the goroutines whose stack holds a function whose name contains marker. It returns
// an error unless exactly one set of labels is found.
func Of(marker string) (string, error) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return "", err
	}
	found := map[string]bool{}
	// With debug=1, each record is a count line, an optional "# labels: " line, then the stack,
	// and records are separated by an empty line.
	for rec := range strings.SplitSeq(buf.String(), "\n\n") {
		if !strings.Contains(rec, marker) {
			continue
		}
		labels := ""
		for line := range strings.SplitSeq(rec, "\n") {
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				labels = l
			}
		}
		found[labels] = true
	}
	if len(found) != 1 {
		return "", fmt.Errorf("proflabels: %d label sets on the goroutines running %s: %v", len(found), marker, found)
	}
	for l := range found {
		return l, nil
	}
	panic("unreachable")
}
