package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchModule is the module path of the bench module that report runs in.
const benchModule = "github.com/corral-go/corral/bench"

// errUsage marks errors in the command line, which exit with status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, time.Now)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// config holds the command-line flags.
type config struct {
	count     int
	bench     string
	benchtime string
	timeout   string
	raw       string
	dir       string
	in        string
}

// run is main without the process: it parses args, produces the benchmark
// output (by running go test, or reading -in), and writes the Markdown to
// stdout. Progress and warnings go to stderr. now gives the date of a run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var (
		output  []byte
		m       meta
		testErr error
	)
	if cfg.in != "" {
		output, m, err = readInput(cfg.in, now)
		if err != nil {
			return err
		}
	} else {
		output, m, testErr = runBenchmarks(ctx, cfg, stderr, now)
		if testErr != nil && len(output) == 0 {
			return testErr
		}
	}
	p, err := parse(bytes.NewReader(output))
	if err != nil {
		return err
	}
	for _, s := range p.skipped {
		fmt.Fprintln(stderr, "report: skipped malformed result", s)
	}
	if len(p.failed) > 0 {
		// More specific than go test's exit status.
		testErr = fmt.Errorf("benchmarks failed: %s", strings.Join(p.failed, "; "))
	}
	if len(p.results) == 0 {
		return errors.Join(testErr, errors.New("no benchmark results"))
	}
	m.goos, m.goarch, m.cpu = p.config["goos"], p.config["goarch"], p.config["cpu"]
	if m.goVersion == "" {
		m.goVersion = runtime.Version()
	}
	if v := cmp.Or(p.config["goversion"], p.config["go"]); v != "" {
		m.goVersion = v
	}
	for _, r := range p.results {
		if !slices.Contains(m.procs, r.procs) {
			m.procs = append(m.procs, r.procs)
		}
	}
	slices.Sort(m.procs)
	if testErr != nil {
		fmt.Fprintf(stdout, "> **Warning:** %v; these tables are incomplete.\n\n", testErr)
	}
	if err := writeMarkdown(stdout, m, buildTables(p.results)); err != nil {
		return err
	}
	return testErr
}

// parseFlags parses and checks the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./cmd/report [-count N] [-bench REGEXP] [-benchtime D] [-timeout D] [-raw FILE] [-dir DIR] [-in FILE]")
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.count, "count", 5, "run each benchmark `N` times; tables show medians")
	fs.StringVar(&cfg.bench, "bench", ".", "run only the benchmarks matching `REGEXP`")
	fs.StringVar(&cfg.benchtime, "benchtime", "", "go test -benchtime `D`, e.g. 1x or 100ms")
	fs.StringVar(&cfg.timeout, "timeout", "1h", "go test -timeout `D`")
	fs.StringVar(&cfg.raw, "raw", "", "also write the raw go test output to `FILE`")
	fs.StringVar(&cfg.dir, "dir", "", "the bench module `DIR` (default: found from the working directory)")
	fs.StringVar(&cfg.in, "in", "", "format this go test -bench output `FILE` instead of running (- for stdin)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.count < 1 {
		return cfg, fmt.Errorf("%w: -count must be at least 1, have %d", errUsage, cfg.count)
	}
	if cfg.in != "" {
		var runOnly []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "count", "bench", "benchtime", "timeout", "raw", "dir":
				runOnly = append(runOnly, "-"+f.Name)
			}
		})
		if len(runOnly) > 0 {
			return cfg, fmt.Errorf("%w: %s cannot be used with -in", errUsage, strings.Join(runOnly, ", "))
		}
	}
	return cfg, nil
}

// readInput reads an existing benchmark output; the date is the file's
// modification time, or now for standard input.
func readInput(name string, now func() time.Time) ([]byte, meta, error) {
	if name == "-" {
		b, err := io.ReadAll(os.Stdin)
		return b, meta{date: now()}, err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, meta{}, err
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, meta{}, err
	}
	return b, meta{date: st.ModTime()}, nil
}

// runBenchmarks runs go test in the bench module, copying its output to
// stderr as it arrives, and returns the output. A non-nil error with
// non-empty output means go test failed part way.
func runBenchmarks(ctx context.Context, cfg config, stderr io.Writer, now func() time.Time) ([]byte, meta, error) {
	dir := cfg.dir
	if dir == "" {
		var err error
		if dir, err = findBenchDir(); err != nil {
			return nil, meta{}, err
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, meta{}, err
	}
	m := meta{date: now()}
	goEnv := exec.CommandContext(ctx, goTool, "env", "GOVERSION")
	goEnv.Dir = dir // the toolchain go test will use there
	if v, err := goEnv.Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(v))
	}
	args := testArgs(cfg)
	fmt.Fprintf(stderr, "report: in %s: go %s\n", dir, strings.Join(args, " "))
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(&out, stderr)
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	if runErr != nil {
		runErr = fmt.Errorf("go test: %w", runErr)
	}
	if cfg.raw != "" {
		if err := os.WriteFile(cfg.raw, out.Bytes(), 0o644); err != nil {
			return out.Bytes(), m, errors.Join(runErr, err)
		}
	}
	return out.Bytes(), m, runErr
}

// testArgs returns the go test command line for cfg.
func testArgs(cfg config) []string {
	args := []string{"test", "-run", "^$", "-bench", cfg.bench, "-benchmem", "-count", strconv.Itoa(cfg.count)}
	if cfg.benchtime != "" {
		args = append(args, "-benchtime", cfg.benchtime)
	}
	if cfg.timeout != "" {
		args = append(args, "-timeout", cfg.timeout)
	}
	return append(args, "./...")
}

// findBenchDir finds the bench module from the working directory: the
// working directory or one of its parents is the bench module, or holds it
// as bench/. As a last resort it uses the directory this source file was
// compiled from (which go run records unless -trimpath is set).
func findBenchDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		for _, cand := range []string{d, filepath.Join(d, "bench")} {
			if isBenchModule(cand) {
				return cand, nil
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d := filepath.Join(filepath.Dir(file), "..", ".."); isBenchModule(d) {
			return filepath.Clean(d), nil
		}
	}
	return "", fmt.Errorf("cannot find the %s module from %s; run from inside the repository or pass -dir", benchModule, wd)
}

// isBenchModule reports whether dir holds the go.mod of the bench module.
func isBenchModule(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == benchModule {
			return true
		}
	}
	return false
}
