package readmetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/readmetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that keeps what Check reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.Errorf(format, args...)
}

// write creates the files of a README test in a temporary directory and returns it.
func write(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const readme = "# x\n\n```sh\ngo get example.com/x\n```\n\n```go\nq, err := x.New(ctx, \"orders\")\n\n\tdefer q.Close(ctx) // owns it\n```\n\n```\nnot go\n```\n"

func TestCheck(t *testing.T) {
	dir := write(t, map[string]string{
		"README.md": readme,
		"readme_test.go": "func TestREADME(t *testing.T) {\n" +
			"\tvar q *x.Q\n\tvar err error\n\tfunc() {\n\t\tq, err = x.New(ctx, \"orders\")\n\t\tdefer q.Close(ctx) // owns it\n\t}()\n}\n",
	})
	r := &recorder{TB: t}
	readmetest.Check(r, filepath.Join(dir, "README.md"), []string{filepath.Join(dir, "*_test.go")})
	if len(r.errors) != 0 {
		t.Errorf("Check of a README its test follows: %q; want no error", r.errors)
	}
}

func TestCheckDrift(t *testing.T) {
	dir := write(t, map[string]string{
		"README.md":      readme,
		"readme_test.go": "q, err := x.New(ctx, \"orders\")\ndefer q.Close(ctx)\n",
	})
	r := &recorder{TB: t}
	readmetest.Check(r, filepath.Join(dir, "README.md"), []string{filepath.Join(dir, "readme_test.go")})
	want := []string{fmt.Sprintf("%s:10: snippet line in no test of %q: defer q.Close(ctx) // owns it",
		filepath.Join(dir, "README.md"), []string{filepath.Join(dir, "readme_test.go")})}
	if !slices.Equal(r.errors, want) || r.fatal {
		t.Errorf("Check of a README whose comment the test dropped: %q, fatal %t; want %q", r.errors, r.fatal, want)
	}
}

func TestCheckChanged(t *testing.T) {
	dir := write(t, map[string]string{
		"README.md":      readme,
		"readme_test.go": "q, err := x.New(ctx, name)\ndefer q.Close(ctx) // owns it\n",
	})
	path := filepath.Join(dir, "README.md")
	tests := []string{filepath.Join(dir, "readme_test.go")}

	r := &recorder{TB: t}
	readmetest.Check(r, path, tests, `q, err := x.New(ctx, "orders")`)
	if len(r.errors) != 0 {
		t.Errorf("Check with the adapted line given: %q; want no error", r.errors)
	}

	r = &recorder{TB: t}
	readmetest.Check(r, path, tests, `q, err := x.New(ctx, "orders")`, "gone := 1")
	want := []string{fmt.Sprintf("readmetest: %s has no snippet line %q, given as changed", path, "gone := 1")}
	if !slices.Equal(r.errors, want) {
		t.Errorf("Check with a changed line the README lacks: %q; want %q", r.errors, want)
	}
}

func TestCheckNoFile(t *testing.T) {
	dir := write(t, map[string]string{"README.md": readme})
	r := &recorder{TB: t}
	readmetest.Check(r, filepath.Join(dir, "README.md"), []string{filepath.Join(dir, "readme_test.go")})
	if !r.fatal || len(r.errors) != 1 {
		t.Errorf("Check with a pattern that names no file: errors %q, fatal %t; want one fatal error", r.errors, r.fatal)
	}
}
