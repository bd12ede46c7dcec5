package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// knownImpls are the impl names of Benchmark<Area>/<impl>; corral and
// baseline lead every table, the rest are ordered alphabetically.
var knownImpls = []string{
	"corral", "baseline",
	"ants", "cenkalti", "conc", "errgroup", "failsafe", "pond", "retrygo", "watermill", "workerpool",
}

// The units of the fixed columns, in column order.
const (
	unitNs     = "ns/op"
	unitBytes  = "B/op"
	unitAllocs = "allocs/op"
)

// missing fills a cell that has no value.
const missing = "—"

// meta is the environment a report ran in, printed above the tables.
type meta struct {
	goVersion string // e.g. go1.26.8
	goos      string
	goarch    string
	cpu       string // the cpu: line of the go test output
	procs     []int  // the distinct GOMAXPROCS values of the results
	date      time.Time
}

// table is the comparison of the impls of one area.
type table struct {
	area   string
	custom []string // units beyond the fixed columns, in order of first appearance
	rows   []row    // ordered by implLess
}

// row is the medians of one impl in one area.
type row struct {
	impl    string
	runs    int                // how many result lines the medians are over
	medians map[string]float64 // by unit
}

// splitName splits a benchmark name (without "Benchmark" and -PROCS) into
// the area and the impl: the impl is the first path element that is a known
// impl, or else the last element; the area is every other element, in order.
// A name with a single element has no impl.
func splitName(name string) (area, impl string) {
	elems := strings.Split(name, "/")
	at := slices.IndexFunc(elems, func(e string) bool { return slices.Contains(knownImpls, e) })
	switch {
	case at >= 0:
	case len(elems) == 1:
		return name, ""
	default:
		at = len(elems) - 1
	}
	impl = elems[at]
	return strings.Join(slices.Delete(elems, at, at+1), "/"), impl
}

// implLess orders corral, then baseline, then every other impl
// alphabetically.
func implLess(a, b string) int {
	rank := func(s string) int {
		switch s {
		case "corral":
			return 0
		case "baseline":
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
}

// buildTables groups results by area and impl and takes the median of every
// unit. Areas keep the order in which they first appear. When the results
// ran at more than one GOMAXPROCS, each value gets its own table, so that
// ratios never compare runs on different numbers of threads.
func buildTables(results []result) []table {
	multiProcs := slices.ContainsFunc(results, func(r result) bool { return r.procs != results[0].procs })
	type key struct{ area, impl string }
	samples := make(map[key]map[string][]float64)
	runs := make(map[key]int)
	var areas []string
	byArea := make(map[string]*table)
	for _, r := range results {
		area, impl := splitName(r.name)
		if multiProcs {
			area = fmt.Sprintf("%s (GOMAXPROCS=%d)", area, r.procs)
		}
		t, ok := byArea[area]
		if !ok {
			t = &table{area: area}
			byArea[area] = t
			areas = append(areas, area)
		}
		k := key{area, impl}
		if samples[k] == nil {
			samples[k] = make(map[string][]float64)
			t.rows = append(t.rows, row{impl: impl})
		}
		runs[k]++
		for _, m := range r.metrics {
			samples[k][m.unit] = append(samples[k][m.unit], m.value)
			switch m.unit {
			case unitNs, unitBytes, unitAllocs:
			default:
				if !slices.Contains(t.custom, m.unit) {
					t.custom = append(t.custom, m.unit)
				}
			}
		}
	}
	tables := make([]table, 0, len(areas))
	for _, area := range areas {
		t := byArea[area]
		for i := range t.rows {
			k := key{area, t.rows[i].impl}
			t.rows[i].runs = runs[k]
			t.rows[i].medians = make(map[string]float64, len(samples[k]))
			for unit, vs := range samples[k] {
				t.rows[i].medians[unit] = median(vs)
			}
		}
		slices.SortFunc(t.rows, func(a, b row) int { return implLess(a.impl, b.impl) })
		tables = append(tables, *t)
	}
	return tables
}

// median returns the median of vs, the mean of the two middle values when
// len(vs) is even. It sorts vs.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// writeMarkdown writes the header line and one table per area.
func writeMarkdown(w io.Writer, m meta, tables []table) error {
	var b strings.Builder
	cpu := cmp.Or(m.cpu, "unknown CPU")
	procs := make([]string, len(m.procs))
	for i, p := range m.procs {
		procs[i] = strconv.Itoa(p)
	}
	fmt.Fprintf(&b, "%s, %s/%s, %s, GOMAXPROCS=%s, %s; %s.\n",
		cmp.Or(m.goVersion, "unknown Go version"), cmp.Or(m.goos, "?"), cmp.Or(m.goarch, "?"), cpu,
		cmp.Or(strings.Join(procs, ","), "?"), m.date.Format(time.DateOnly), runsPhrase(tables))
	b.WriteString("Ratios divide a row's ns/op by baseline's or corral's: below 1.00x is faster.\n")
	for _, t := range tables {
		fmt.Fprintf(&b, "\n### %s\n\n", escape(t.area))
		cols := append([]string{"impl", unitNs, unitBytes, unitAllocs}, t.custom...)
		cols = append(cols, "vs baseline", "vs corral")
		writeRow(&b, cols, escape)
		align := make([]string, len(cols))
		for i := range align {
			align[i] = "--:"
		}
		align[0] = ":--"
		writeRow(&b, align, func(s string) string { return s })
		base := findRow(t.rows, "baseline")
		ref := findRow(t.rows, "corral")
		for _, r := range t.rows {
			cells := []string{cmp.Or(r.impl, missing)}
			for _, unit := range cols[1 : len(cols)-2] {
				cells = append(cells, formatValue(r.medians, unit))
			}
			cells = append(cells, ratio(r, base), ratio(r, ref))
			writeRow(&b, cells, escape)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRow writes one Markdown table row.
func writeRow(b *strings.Builder, cells []string, esc func(string) string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(esc(c))
		b.WriteString(" |")
	}
	b.WriteString("\n")
}

// escape protects the characters that would break a Markdown table cell.
func escape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// findRow returns the row of impl, or nil.
func findRow(rows []row, impl string) *row {
	i := slices.IndexFunc(rows, func(r row) bool { return r.impl == impl })
	if i < 0 {
		return nil
	}
	return &rows[i]
}

// ratio formats r's ns/op divided by ref's with two decimals (two
// significant digits below 0.1), or missing when either is absent or ref's
// is zero.
func ratio(r row, ref *row) string {
	if ref == nil {
		return missing
	}
	num, ok1 := r.medians[unitNs]
	den, ok2 := ref.medians[unitNs]
	if !ok1 || !ok2 || den == 0 {
		return missing
	}
	q := num / den
	if q < 0.1 {
		return strconv.FormatFloat(q, 'g', 2, 64) + "x" // 0.016x, not 0.02x
	}
	return strconv.FormatFloat(q, 'f', 2, 64) + "x"
}

// formatValue formats the median of unit, or missing. Whole numbers and
// values of 100 or more are rounded and grouped by thousands (12,345);
// smaller values keep three significant digits.
func formatValue(medians map[string]float64, unit string) string {
	v, ok := medians[unit]
	switch {
	case !ok || math.IsNaN(v) || math.IsInf(v, 0):
		return missing
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return groupThousands(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// groupThousands formats n with a comma between groups of three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// runsPhrase says how many runs the medians are over: "medians of 5 runs",
// or a range when rows differ.
func runsPhrase(tables []table) string {
	lo, hi := math.MaxInt, 0
	for _, t := range tables {
		for _, r := range t.rows {
			lo, hi = min(lo, r.runs), max(hi, r.runs)
		}
	}
	switch {
	case hi == 0:
		return "no runs"
	case hi == 1:
		return "single runs, not medians (use -count 5 or more)"
	case lo == hi:
		return fmt.Sprintf("medians of %d runs", hi)
	default:
		return fmt.Sprintf("medians of %d to %d runs", lo, hi)
	}
}
