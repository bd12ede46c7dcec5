package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// metric is one value-unit pair of a benchmark result line, such as
// 1234 ns/op or 3.5 speedup-x.
type metric struct {
	unit  string
	value float64
}

// result is one benchmark result line.
type result struct {
	name    string   // full name without the "Benchmark" prefix or -GOMAXPROCS suffix
	procs   int      // GOMAXPROCS the line ran with
	iters   int      // the iteration count, b.N
	metrics []metric // in the order of the line
}

// parsed is what parse extracts from a go test -bench output.
type parsed struct {
	config  map[string]string // the first value of each "key: value" line
	results []result          // in the order of the input
	skipped []string          // malformed result lines, with their line numbers
	failed  []string          // the "--- FAIL: X" lines, or "FAIL" when go test failed without one
}

// parse reads the standard Go benchmark format (golang.org/design/14313):
// "key: value" configuration lines, and result lines of the form
//
//	BenchmarkName-PROCS  iterations  value unit  value unit ...
//
// Failures ("--- FAIL: X" lines, or a "FAIL" line) are listed in failed.
// Other lines (PASS, ok, logs) are ignored. Lines that start like a result
// but do not parse are listed in skipped rather than dropped silently.
//
// The -PROCS suffix is removed from names only when every result line has
// one, because go test leaves it out when GOMAXPROCS is 1 and a name may end
// in digits of its own ("workers-8").
func parse(r io.Reader) (*parsed, error) {
	p := &parsed{config: make(map[string]string)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	allSuffixed := true
	sawFAIL := false // a FAIL line for a package
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "--- FAIL:") {
			p.failed = append(p.failed, trimmed)
			continue
		}
		if line == "FAIL" || strings.HasPrefix(line, "FAIL\t") {
			sawFAIL = true
			continue
		}
		if key, value, ok := configLine(line); ok {
			if _, seen := p.config[key]; !seen {
				p.config[key] = value
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !isBenchmarkName(fields[0]) || line[0] != 'B' {
			continue
		}
		iters, err := strconv.Atoi(fields[1])
		if err != nil {
			// A name printed alone before a benchmark's log output, or a log
			// line that starts with a benchmark-like word.
			continue
		}
		res, err := resultLine(fields[0], iters, fields[2:])
		if err != nil {
			p.skipped = append(p.skipped, fmt.Sprintf("line %d: %v: %q", lineNo, err, line))
			continue
		}
		if _, _, ok := cutProcs(res.name); !ok {
			allSuffixed = false
		}
		p.results = append(p.results, res)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if sawFAIL && len(p.failed) == 0 {
		p.failed = []string{"FAIL"} // a build failure, a panic or a timeout
	}
	for i := range p.results {
		p.results[i].procs = 1
		if allSuffixed {
			p.results[i].name, p.results[i].procs, _ = cutProcs(p.results[i].name)
		}
	}
	return p, nil
}

// configLine reports whether line is a configuration line: a key that starts
// with a lower-case letter and has no space, a colon, then a space or the end
// of the line.
func configLine(line string) (key, value string, ok bool) {
	key, value, found := strings.Cut(line, ":")
	if !found || key == "" || strings.ContainsAny(key, " \t") {
		return "", "", false
	}
	if r, _ := utf8.DecodeRuneInString(key); !unicode.IsLower(r) {
		return "", "", false
	}
	if value != "" && value[0] != ' ' && value[0] != '\t' {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}

// isBenchmarkName reports whether s names a benchmark: "Benchmark" followed by
// nothing or by a character that is not a lower-case letter, as go test
// requires.
func isBenchmarkName(s string) bool {
	rest, ok := strings.CutPrefix(s, "Benchmark")
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}

// resultLine builds a result from the name field, the iteration count and the
// value-unit pairs that follow them.
func resultLine(name string, iters int, pairs []string) (result, error) {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return result{}, fmt.Errorf("want value-unit pairs after the iteration count, have %d fields", len(pairs))
	}
	res := result{name: strings.TrimPrefix(name, "Benchmark"), iters: iters}
	for i := 0; i < len(pairs); i += 2 {
		v, err := strconv.ParseFloat(pairs[i], 64)
		if err != nil {
			return result{}, fmt.Errorf("value %q of %s is not a number", pairs[i], pairs[i+1])
		}
		res.metrics = append(res.metrics, metric{unit: pairs[i+1], value: v})
	}
	return res, nil
}

// cutProcs splits a trailing -N (GOMAXPROCS) from name.
func cutProcs(name string) (base string, procs int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name, 1, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n <= 0 || name[i+1] == '+' {
		return name, 1, false
	}
	return name[:i], n, true
}
