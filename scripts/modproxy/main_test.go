package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRepo makes a git repository with a root module and a nested one, and returns its path.
func newRepo(t *testing.T, nestedMod string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/lib\n\ngo 1.25\n",
		"lib.go":            "package lib\n\nconst V = 1\n",
		"sub/go.mod":        nestedMod,
		"sub/sub.go":        "package sub\n",
		"docs/untracked.md": "",
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, root, "git", "init", "-q")
	run(t, root, "git", "add", "go.mod", "lib.go", "sub")
	run(t, root, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
	return root
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

const nested = "module example.com/lib/sub\n\ngo 1.25\n\nrequire example.com/lib v0.1.0\n"

func TestPublishesEveryTagInTheProxyLayout(t *testing.T) {
	root := newRepo(t, nested)
	run(t, root, "git", "tag", "v0.1.0")
	run(t, root, "git", "tag", "v0.2.0")
	run(t, root, "git", "tag", "sub/v0.1.0")
	run(t, root, "git", "tag", "sub/nonsense") // not a release: ignored
	out := t.TempDir()
	if err := publishAll(root, out, "", "", []string{".", "sub"}); err != nil {
		t.Fatal(err)
	}

	list, err := os.ReadFile(filepath.Join(out, "example.com/lib/@v/list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "v0.1.0\nv0.2.0\n"; got != want {
		t.Errorf("root list = %q, want %q", got, want)
	}
	list, err = os.ReadFile(filepath.Join(out, "example.com/lib/sub/@v/list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "v0.1.0\n"; got != want {
		t.Errorf("nested list = %q, want %q", got, want)
	}

	var info struct{ Version string }
	data, err := os.ReadFile(filepath.Join(out, "example.com/lib/sub/@v/v0.1.0.info"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil || info.Version != "v0.1.0" {
		t.Errorf("info = %s (%v), want Version v0.1.0", data, err)
	}
	mod, err := os.ReadFile(filepath.Join(out, "example.com/lib/sub/@v/v0.1.0.mod"))
	if err != nil || string(mod) != nested {
		t.Errorf(".mod = %q (%v), want the tagged go.mod", mod, err)
	}

	// The root zip holds the root module only: the nested module is its own.
	if got, want := zipNames(t, filepath.Join(out, "example.com/lib/@v/v0.1.0.zip")),
		[]string{"example.com/lib@v0.1.0/go.mod", "example.com/lib@v0.1.0/lib.go"}; !slices.Equal(got, want) {
		t.Errorf("root zip = %v, want %v", got, want)
	}
	if got, want := zipNames(t, filepath.Join(out, "example.com/lib/sub/@v/v0.1.0.zip")),
		[]string{"example.com/lib/sub@v0.1.0/go.mod", "example.com/lib/sub@v0.1.0/sub.go"}; !slices.Equal(got, want) {
		t.Errorf("nested zip = %v, want %v", got, want)
	}
}

func zipNames(t *testing.T, name string) []string {
	t.Helper()
	r, err := zip.OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestRefusesAReplaceDirective(t *testing.T) {
	root := newRepo(t, nested+"\nreplace example.com/lib => ../\n")
	run(t, root, "git", "tag", "sub/v0.1.0")
	err := publishAll(root, t.TempDir(), "", "", []string{"sub"})
	if err == nil || !strings.Contains(err.Error(), "replace directive (example.com/lib)") {
		t.Fatalf("publish = %v, want the replace directive refused", err)
	}
}

func TestUntaggedModule(t *testing.T) {
	root := newRepo(t, nested)
	err := publishAll(root, t.TempDir(), "", "", []string{"sub"})
	if err == nil || !strings.Contains(err.Error(), `module "sub" has no release tag (sub/v*)`) {
		t.Fatalf("publish without a tag = %v, want an error naming the tag pattern", err)
	}
	out := t.TempDir()
	if err := publishAll(root, out, "v0.3.0", "", []string{"sub"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "example.com/lib/sub/@v/v0.3.0.zip")); err != nil {
		t.Errorf("HEAD not published under -untagged: %v", err)
	}
}

func TestHeadBesideTheTags(t *testing.T) {
	root := newRepo(t, nested)
	run(t, root, "git", "tag", "sub/v0.1.0")
	out := t.TempDir()
	if err := publishAll(root, out, "", "v0.1.1-0.head", []string{"sub"}); err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(out, "example.com/lib/sub/@v/list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "v0.1.0\nv0.1.1-0.head\n"; got != want {
		t.Errorf("list = %q, want %q", got, want)
	}
	// A module without a tag is published under -head alone.
	untagged := newRepo(t, nested)
	if err := publishAll(untagged, t.TempDir(), "", "v0.1.1-0.head", []string{".", "sub"}); err != nil {
		t.Errorf("-head of untagged modules = %v, want them published", err)
	}
	err = publishAll(root, t.TempDir(), "", "v0.1.0", []string{"sub"})
	if err == nil || !strings.Contains(err.Error(), `module "sub": -head v0.1.0: a release has that version`) {
		t.Fatalf("-head of a released version = %v, want it refused", err)
	}
}
