package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	in := `goos: linux
goarch: arm64
pkg: example.com/bench
cpu: Apple M2
notconfig:value
Not config: value
BenchmarkScope/corral
    scope_test.go:10: a log line
BenchmarkScope/corral-8   	  100	  1234 ns/op	  96 B/op	  2 allocs/op
BenchmarkPool/submit/corral/workers-4-8   	  50	  2.5 ns/op	  3.25 speedup-x	  0 B/op	  0 allocs/op
Benchmarking is fun   	 1	 2 ns/op
  BenchmarkIndented-8   	  100	  1 ns/op
BenchmarkBad-8   	  100	  abc ns/op
pkg: example.com/other
cpu: ignored, the first wins
PASS
`
	p, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	wantConfig := map[string]string{"goos": "linux", "goarch": "arm64", "pkg": "example.com/bench", "cpu": "Apple M2"}
	if !reflect.DeepEqual(p.config, wantConfig) {
		t.Errorf("config = %v; want %v", p.config, wantConfig)
	}
	want := []result{
		{name: "Scope/corral", procs: 8, iters: 100, metrics: []metric{{"ns/op", 1234}, {"B/op", 96}, {"allocs/op", 2}}},
		{name: "Pool/submit/corral/workers-4", procs: 8, iters: 50, metrics: []metric{{"ns/op", 2.5}, {"speedup-x", 3.25}, {"B/op", 0}, {"allocs/op", 0}}},
	}
	if !reflect.DeepEqual(p.results, want) {
		t.Errorf("results = %+v; want %+v", p.results, want)
	}
	if len(p.skipped) != 1 || !strings.HasPrefix(p.skipped[0], "line 13: ") {
		t.Errorf("skipped = %q; want one entry for line 13", p.skipped)
	}
}

func TestParseKeepsNameDigitsWithoutProcsSuffix(t *testing.T) {
	// GOMAXPROCS=1: go test adds no suffix, so "-8" belongs to the name.
	in := "BenchmarkPool/corral/workers-8 \t 10 \t 5 ns/op\n" +
		"BenchmarkPool/baseline \t 10 \t 4 ns/op\n"
	p, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.results {
		if r.procs != 1 {
			t.Errorf("%s: procs = %d; want 1", r.name, r.procs)
		}
		got = append(got, r.name)
	}
	if want := []string{"Pool/corral/workers-8", "Pool/baseline"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names = %q; want %q", got, want)
	}
}

func TestSplitName(t *testing.T) {
	for _, tc := range []struct{ name, area, impl string }{
		{"Scope/corral", "Scope", "corral"},
		{"Pool/submit/pond", "Pool/submit", "pond"},
		{"Pool/corral/workers=8", "Pool/workers=8", "corral"},
		{"Pool/x/errgroup/y/z", "Pool/x/y/z", "errgroup"},
		{"Queue/unknownlib", "Queue", "unknownlib"},
		{"Queue/a/b", "Queue/a", "b"},
		{"Lonely", "Lonely", ""},
	} {
		area, impl := splitName(tc.name)
		if area != tc.area || impl != tc.impl {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", tc.name, area, impl, tc.area, tc.impl)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{900, 2000, 950}, 950},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(append([]float64(nil), tc.in...)); got != tc.want {
			t.Errorf("median(%v) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{1234567, "1,234,567"},
		{999.6, "1,000"},
		{123.4, "123"},
		{12.34, "12.3"},
		{3.5, "3.50"},
		{0.01234, "0.0123"},
		{-4321, "-4,321"},
	} {
		if got := formatValue(map[string]float64{"u": tc.v}, "u"); got != tc.want {
			t.Errorf("formatValue(%v) = %q; want %q", tc.v, got, tc.want)
		}
	}
	if got := formatValue(nil, "u"); got != missing {
		t.Errorf("formatValue of a missing unit = %q; want %q", got, missing)
	}
}

func TestWriteMarkdown(t *testing.T) {
	results := []result{
		{name: "Queue/watermill", procs: 2, metrics: []metric{{"ns/op", 3000}, {"B/op", 10}, {"allocs/op", 1}}},
		{name: "Queue/corral", procs: 2, metrics: []metric{{"ns/op", 1000}, {"B/op", 8}, {"allocs/op", 1}, {"jobs/s", 5000}}},
		{name: "Queue/baseline", procs: 2, metrics: []metric{{"ns/op", 2000}, {"B/op", 4}, {"allocs/op", 0}}},
		{name: "Queue/corral", procs: 2, metrics: []metric{{"ns/op", 1200}, {"B/op", 8}, {"allocs/op", 1}, {"jobs/s", 4000}}},
		{name: "Queue/baseline", procs: 2, metrics: []metric{{"ns/op", 2200}, {"B/op", 4}, {"allocs/op", 0}}},
		{name: "Queue/watermill", procs: 2, metrics: []metric{{"ns/op", 3300}, {"B/op", 10}, {"allocs/op", 1}}},
		{name: "Backoff/a|b", procs: 2, metrics: []metric{{"ns/op", 5}}},
		{name: "Backoff/a|b", procs: 2, metrics: []metric{{"ns/op", 6}}},
	}
	m := meta{
		goVersion: "go1.26.8", goos: "linux", goarch: "amd64", cpu: "Intel(R) Xeon(R) CPU @ 2.20GHz",
		procs: []int{2}, date: time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC),
	}
	var b strings.Builder
	if err := writeMarkdown(&b, m, buildTables(results)); err != nil {
		t.Fatal(err)
	}
	const want = `go1.26.8, linux/amd64, Intel(R) Xeon(R) CPU @ 2.20GHz, GOMAXPROCS=2, 2026-11-29; medians of 2 runs.
Ratios divide a row's ns/op by baseline's or corral's: below 1.00x is faster.

### Queue

| impl | ns/op | B/op | allocs/op | jobs/s | vs baseline | vs corral |
| :-- | --: | --: | --: | --: | --: | --: |
| corral | 1,100 | 8 | 1 | 4,500 | 0.52x | 1.00x |
| baseline | 2,100 | 4 | 0 | — | 1.00x | 1.91x |
| watermill | 3,150 | 10 | 1 | — | 1.50x | 2.86x |

### Backoff

| impl | ns/op | B/op | allocs/op | vs baseline | vs corral |
| :-- | --: | --: | --: | --: | --: |
| a\|b | 5.50 | — | — | — | — |
`
	if got := b.String(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

func TestBuildTablesSplitsByGOMAXPROCS(t *testing.T) {
	results := []result{
		{name: "Scope/corral", procs: 1, metrics: []metric{{"ns/op", 10}}},
		{name: "Scope/corral", procs: 2, metrics: []metric{{"ns/op", 20}}},
		{name: "Scope/baseline", procs: 1, metrics: []metric{{"ns/op", 30}}},
	}
	var areas []string
	for _, tb := range buildTables(results) {
		var impls []string
		for _, r := range tb.rows {
			impls = append(impls, r.impl)
		}
		areas = append(areas, tb.area+": "+strings.Join(impls, ","))
	}
	want := []string{"Scope (GOMAXPROCS=1): corral,baseline", "Scope (GOMAXPROCS=2): corral"}
	if !reflect.DeepEqual(areas, want) {
		t.Errorf("tables = %q; want %q", areas, want)
	}
}

// TestRunIn formats testdata/sample.txt, a go test output with sub-levels,
// custom metrics, logs, a missing baseline, a missing corral and a malformed
// line, and compares it with testdata/sample.md.
func TestRunIn(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join("testdata", "sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "sample.md"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(in, sample, 0o644); err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 11, 29, 12, 0, 0, 0, time.Local)
	if err := os.Chtimes(in, date, date); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	noNow := func() time.Time { t.Fatal("now called with -in FILE"); return time.Time{} }
	if err := run(context.Background(), []string{"-in", in}, &stdout, &stderr, noNow); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	if got := stdout.String(); got != string(want) {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
	wantErr := `report: skipped malformed result line 43: want value-unit pairs after the iteration count, have 3 fields: "BenchmarkBroken-2               \t      10\t         5 ns/op\t   7"` + "\n"
	if got := stderr.String(); got != wantErr {
		t.Errorf("stderr = %q; want %q", got, wantErr)
	}
}

func TestRunInWithoutResults(t *testing.T) {
	in := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(in, []byte("goos: linux\nPASS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-in", in}, &stdout, &stderr, time.Now)
	if err == nil || err.Error() != "no benchmark results" {
		t.Errorf("run = %v; want no benchmark results", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q; want nothing", stdout.String())
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for success
	}{
		{[]string{"-count", "3", "-bench", "Scope", "-benchtime", "1x"}, ""},
		{[]string{"-in", "x.txt"}, ""},
		{[]string{"-count", "0"}, "usage: -count must be at least 1, have 0"},
		{[]string{"-in", "x.txt", "-count", "3", "-bench", "."}, "usage: -bench, -count cannot be used with -in"},
		{[]string{"stray"}, `usage: unexpected arguments ["stray"]`},
		{[]string{"-nope"}, "usage: flag provided but not defined: -nope"},
	} {
		_, err := parseFlags(tc.args, new(bytes.Buffer))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("parseFlags(%q) = %v; want success", tc.args, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, errUsage)):
			t.Errorf("parseFlags(%q) = %v; want usage error %q", tc.args, err, tc.want)
		}
	}
}

func TestTestArgs(t *testing.T) {
	cfg, err := parseFlags([]string{"-count", "3", "-bench", "Scope|Pool", "-benchtime", "100ms"}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(testArgs(cfg), " ")
	want := "test -run ^$ -bench Scope|Pool -benchmem -count 3 -benchtime 100ms -timeout 1h ./..."
	if got != want {
		t.Errorf("testArgs = %q; want %q", got, want)
	}
}

func TestFindBenchDir(t *testing.T) {
	// The test runs in bench/cmd/report, two levels below the module.
	dir, err := findBenchDir()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Dir(filepath.Dir(wd)); dir != want {
		t.Errorf("findBenchDir = %q; want %q", dir, want)
	}
	if !isBenchModule(dir) || isBenchModule(filepath.Dir(dir)) {
		t.Errorf("isBenchModule: want true for %s only", dir)
	}
}

func TestRunInFailed(t *testing.T) {
	in := filepath.Join(t.TempDir(), "failed.txt")
	out := "goos: linux\n" +
		"BenchmarkScope/corral-2 \t 100 \t 1000 ns/op\n" +
		"--- FAIL: BenchmarkZ\n" +
		"    --- FAIL: BenchmarkZ/corral\n" +
		"        z_test.go:7: boom\n" +
		"FAIL\n" +
		"exit status 1\n" +
		"FAIL\tgithub.com/corral-go/corral/bench\t0.5s\n"
	if err := os.WriteFile(in, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-in", in}, &stdout, &stderr, time.Now)
	const wantErr = "benchmarks failed: --- FAIL: BenchmarkZ; --- FAIL: BenchmarkZ/corral"
	if err == nil || err.Error() != wantErr {
		t.Errorf("run = %v; want %q", err, wantErr)
	}
	const wantHead = "> **Warning:** " + wantErr + "; these tables are incomplete.\n\n"
	if !strings.HasPrefix(stdout.String(), wantHead) || !strings.Contains(stdout.String(), "| corral | 1,000 | — | — | — | 1.00x |\n") {
		t.Errorf("stdout = %q; want the warning %q and the corral row", stdout.String(), wantHead)
	}
}

func TestParseBuildFailure(t *testing.T) {
	p, err := parse(strings.NewReader("# example.com/x\n./x_test.go:3:1: syntax error\nFAIL\texample.com/x [build failed]\nFAIL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"FAIL"}; !reflect.DeepEqual(p.failed, want) || len(p.results) != 0 {
		t.Errorf("failed = %q, results = %v; want %q and none", p.failed, p.results, want)
	}
}

func TestRatio(t *testing.T) {
	ref := &row{impl: "baseline", medians: map[string]float64{"ns/op": 1_166_247_139}}
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{19_234_388, "0.016x"},
		{1_166_247_139, "1.00x"},
		{366_934_700_000, "314.63x"},
	} {
		r := row{impl: "corral", medians: map[string]float64{"ns/op": tc.ns}}
		if got := ratio(r, ref); got != tc.want {
			t.Errorf("ratio(%v) = %q; want %q", tc.ns, got, tc.want)
		}
	}
	if got := ratio(row{medians: map[string]float64{"ns/op": 1}}, &row{medians: map[string]float64{"ns/op": 0}}); got != missing {
		t.Errorf("ratio to zero = %q; want %q", got, missing)
	}
	if got := ratio(row{medians: map[string]float64{"ns/op": 1}}, nil); got != missing {
		t.Errorf("ratio to no row = %q; want %q", got, missing)
	}
}
