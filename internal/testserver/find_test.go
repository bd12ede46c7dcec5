package testserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exe writes an executable file name in dir.
func exe(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const env = "TESTSERVER_TEST_BIN"

// TestFind: the environment variable wins (a directory, or the path of the one executable),
// then the highest version of Dirs that holds every name, then PATH.
func TestFind(t *testing.T) {
	root := t.TempDir()
	exe(t, root+"/v/9/bin", "a")
	exe(t, root+"/v/9/bin", "b")
	exe(t, root+"/v/10/bin", "a")
	exe(t, root+"/v/10/bin", "b")
	exe(t, root+"/v/11/bin", "a") // no b: not a candidate
	exe(t, root+"/path", "a")
	exe(t, root+"/path", "b")
	exe(t, root+"/env", "a")
	exe(t, root+"/env", "b")
	t.Setenv("PATH", root+"/path")
	b := Binary{Pkg: "x", Names: []string{"a", "b"}, Env: env, Dirs: root + "/v/*/bin", Package: "pkg"}
	find := func(b Binary) []string {
		t.Helper()
		p, err := b.Find()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv(env, "")
	if got, want := find(b), []string{root + "/v/10/bin/a", root + "/v/10/bin/b"}; !slices.Equal(got, want) {
		t.Errorf("Find() = %v, want %v (the highest complete version)", got, want)
	}
	b.Dirs = ""
	if got, want := find(b), []string{root + "/path/a", root + "/path/b"}; !slices.Equal(got, want) {
		t.Errorf("Find() without Dirs = %v, want %v (PATH)", got, want)
	}
	t.Setenv(env, root+"/env")
	if got, want := find(b), []string{root + "/env/a", root + "/env/b"}; !slices.Equal(got, want) {
		t.Errorf("Find() with %s a directory = %v, want %v", env, got, want)
	}
	one := Binary{Pkg: "x", Names: []string{"a"}, Env: env, Package: "pkg"}
	t.Setenv(env, root+"/v/11/bin/a")
	if got, want := find(one), []string{root + "/v/11/bin/a"}; !slices.Equal(got, want) {
		t.Errorf("Find() with %s a file = %v, want %v", env, got, want)
	}
}

// TestFindMissing: without the executables, Find's error begins with Pkg and names the Debian
// package and the environment variable; a variable that names nothing usable is not passed by.
func TestFindMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	b := Binary{Pkg: "xtest", Names: []string{"a", "b"}, Env: env, Dirs: t.TempDir() + "/*/bin", Package: "pkg"}
	for _, v := range []string{"", t.TempDir(), "/nonexistent/a"} {
		t.Setenv(env, v)
		_, err := b.Find()
		if err == nil || !strings.HasPrefix(err.Error(), "xtest: ") ||
			!strings.Contains(err.Error(), "apt-get install pkg") || !strings.Contains(err.Error(), env) {
			t.Errorf("Find() with %s=%q: %v, want an error naming the package and the variable", env, v, err)
		}
	}
	exe(t, filepath.Dir(os.Getenv("PATH"))+"/elsewhere", "a")
	t.Setenv(env, "")
	if _, err := (Binary{Pkg: "xtest", Names: []string{"a"}, Env: env, Package: "pkg"}).Find(); err == nil {
		t.Error("Find() of an executable on no PATH: no error")
	}
}
