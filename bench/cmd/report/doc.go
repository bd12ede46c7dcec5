// Command report runs corral's benchmarks and prints, per area, a Markdown
// table that a pull request or the README can paste.
//
// Benchmarks in the bench module are named Benchmark<Area>/<impl>, where impl
// is corral, baseline (a naive reference written with the standard library)
// or a peer library (errgroup, conc, pond, ants, workerpool, cenkalti,
// retrygo, failsafe, watermill). Extra sub-levels before or after the impl
// are allowed: BenchmarkPool/submit/corral lands in the table "Pool/submit",
// BenchmarkPool/corral/workers=8 in the table "Pool/workers=8".
//
// Usage, from the bench directory (or anywhere inside the repository):
//
//	go run ./cmd/report [flags]
//
// The flags are:
//
//	-count N         run each benchmark N times (default 5); tables show medians
//	-bench REGEXP    run only the benchmarks matching REGEXP (default ".")
//	-benchtime D     passed to go test -benchtime (e.g. 1x, 100ms, 1000x)
//	-timeout D       passed to go test -timeout (default 1h)
//	-raw FILE        also write the raw go test output to FILE, for benchstat
//	-dir DIR         the bench module directory (default: found from the
//	                 working directory)
//	-in FILE         format an existing "go test -bench" output file instead
//	                 of running the benchmarks ("-" reads standard input);
//	                 -count, -bench, -benchtime, -timeout and -raw do not
//	                 apply
//
// Without -in, report runs
//
//	go test -run '^$' -bench REGEXP -benchmem -count N -timeout D ./...
//
// in the bench module, copies its output to standard error as it arrives (so a
// long run shows progress) and writes the Markdown to standard output:
//
//	go run ./cmd/report -bench 'Pool|Scope' -count 10 > bench.md
//
// Each table has one row per impl, ordered corral, baseline, then the others
// alphabetically, and the columns ns/op, B/op, allocs/op, every custom metric
// the area reports with testing.B.ReportMetric (peak-heap-B, speedup-x, ...),
// and the ratio of the row's ns/op to baseline's and to corral's ("—" when
// that row is missing). Every value is the median over the runs. A header
// line gives the Go version, GOOS/GOARCH, the CPU model, GOMAXPROCS and the
// date.
//
// With -in, the Go version comes from a "goversion:" or "go:" line of the file
// when it has one, and otherwise is the version of the toolchain running
// report; the date is the file's modification time (today for standard
// input).
//
// To compare a branch with main, prefer benchstat on raw outputs:
//
//	go run ./cmd/report -count 10 -raw new.txt  # on the branch
//	go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt
//
// report exits with status 2 for bad flags and 1 when the benchmarks fail
// (go test exits non-zero, or the -in file has "--- FAIL" or "FAIL" lines) or
// there are no benchmark results; when benchmarks fail part way, the tables
// for those that did run are still printed, under a warning.
package main
