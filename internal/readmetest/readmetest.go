package readmetest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check fails t for each line of readme's ```go blocks that is not a line of one of the files
// that the patterns (filepath.Glob patterns) name, once both are read with every run of white
// space as one space, none at either end, and `:=` as `=` (a test declares a snippet's variables
// before the closure that holds it). A pattern that names no file fails t.
//
// changed lists the snippet lines the tests adapt (a server's address, a replica count), each as
// the README writes it; they need no match, and one the README does not hold fails t, so that
// the list stays in step with the README.
func Check(t testing.TB, readme string, patterns []string, changed ...string) {
	t.Helper()
	snippets, err := goLines(readme)
	// testing.T's Fatalf does not return; the returns after it are for a TB that records.
	if err != nil {
		t.Fatalf("readmetest: %v", err)
		return
	}
	tested := map[string]bool{}
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("readmetest: %q names no file (%v)", pattern, err)
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("readmetest: %v", err)
				return
			}
			for line := range strings.Lines(string(b)) {
				tested[normalize(line)] = true
			}
		}
	}
	adapted := map[string]bool{}
	for _, line := range changed {
		adapted[normalize(line)] = true
	}
	inREADME := map[string]bool{}
	for _, s := range snippets {
		inREADME[s.key] = true
		if !tested[s.key] && !adapted[s.key] {
			t.Errorf("%s:%d: snippet line in no test of %q: %s", readme, s.line, patterns, s.text)
		}
	}
	for _, line := range changed {
		if !inREADME[normalize(line)] {
			t.Errorf("readmetest: %s has no snippet line %q, given as changed", readme, line)
		}
	}
}

// A snippetLine is a non-blank line of a ```go block: its text trimmed, its key normalized, and
// its line number.
type snippetLine struct {
	text, key string
	line      int
}

// goLines returns the non-blank lines of the ```go blocks of the file at path.
func goLines(path string) ([]snippetLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []snippetLine
	inGo := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(text, "```"):
			inGo = !inGo && text == "```go"
		case inGo && text != "":
			lines = append(lines, snippetLine{text, normalize(text), n})
		}
	}
	return lines, sc.Err()
}

// normalize reads every run of white space in line as one space (gofmt aligns comments in a
// test otherwise than in a README), drops it at either end, and reads `:=` as `=`.
func normalize(line string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(line), " "), ":=", "=")
}
