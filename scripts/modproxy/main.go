// Command modproxy publishes modules of this repository into a file-system module proxy: a
// directory laid out as the GOPROXY protocol serves it (<module>/@v/list, <version>.info,
// <version>.mod, <version>.zip), so that a fresh module with GOPROXY=file://DIR can go get them
// exactly as a user gets them from proxy.golang.org.
//
// Each module is published at every release tag it has: vX.Y.Z for the module at the root of
// the repository, <dir>/vX.Y.Z for the module in <dir>, the way the go command expects tags of
// nested modules. A module without a tag is an error, unless -untagged names a version: HEAD
// is then published under it, and a warning says so. -head publishes HEAD under a version
// besides the tags, for every module given, tagged or not (a tag of that version is an error).
//
// The zips are made by golang.org/x/mod/zip from the tagged commit (not the working tree), so
// they hold what a tag holds, minus nested modules. A published go.mod must not carry a
// replace directive, since a dependency's replace directives are ignored by the user's build:
// modproxy refuses one.
//
// Usage:
//
//	go run ./scripts/modproxy -repo . -out /tmp/proxy . queue/jetstream
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	out := flag.String("out", "", "the proxy directory to write (required)")
	untagged := flag.String("untagged", "", "publish HEAD under this version for a module without a release tag")
	head := flag.String("head", "", "publish HEAD under this version too, for every module")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-repo DIR] [-untagged vX.Y.Z] [-head vX.Y.Z] MODULE_DIR...")
		os.Exit(2)
	}
	root, err := filepath.Abs(*repo)
	if err == nil {
		err = publishAll(root, *out, *untagged, *head, flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

// A release is one module at one version, taken from one revision.
type release struct {
	dir      string // the module's directory in the repository, "" for the root
	version  string
	revision string // a tag, or HEAD
}

func publishAll(root, out, untagged, head string, dirs []string) error {
	for _, v := range []struct{ flag, version string }{{"-untagged", untagged}, {"-head", head}} {
		if v.version != "" && !semver.IsValid(v.version) {
			return fmt.Errorf("%s %q is not a semantic version", v.flag, v.version)
		}
	}
	for _, dir := range dirs {
		dir = strings.Trim(path.Clean(filepath.ToSlash(dir)), "/")
		if dir == "." {
			dir = ""
		}
		rels, err := releases(root, dir)
		if err != nil {
			return err
		}
		if len(rels) == 0 && head == "" {
			if untagged == "" {
				return fmt.Errorf("module %q has no release tag (%sv*)", display(dir), prefix(dir))
			}
			fmt.Fprintf(os.Stderr, "modproxy: warning: module %q has no release tag; publishing HEAD as %s\n", display(dir), untagged)
			rels = []release{{dir: dir, version: untagged, revision: "HEAD"}}
		}
		if head != "" {
			if slices.ContainsFunc(rels, func(r release) bool { return r.version == head }) {
				return fmt.Errorf("module %q: -head %s: a release has that version", display(dir), head)
			}
			rels = append(rels, release{dir: dir, version: head, revision: "HEAD"})
		}
		for _, r := range rels {
			if err := publish(root, out, r); err != nil {
				return fmt.Errorf("%s@%s: %w", display(dir), r.version, err)
			}
		}
	}
	return nil
}

func display(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// prefix is the tag prefix of the module in dir.
func prefix(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "/"
}

// releases lists the release tags of the module in dir, oldest first.
func releases(root, dir string) ([]release, error) {
	p := prefix(dir)
	list, err := git(root, "tag", "--list", p+"v*")
	if err != nil {
		return nil, err
	}
	var rels []release
	for tag := range strings.FieldsSeq(string(list)) {
		v := strings.TrimPrefix(tag, p)
		if strings.Contains(v, "/") || !semver.IsValid(v) || semver.Build(v) != "" {
			continue // another module's tag, or not a release
		}
		rels = append(rels, release{dir: dir, version: v, revision: tag})
	}
	slices.SortFunc(rels, func(a, b release) int { return semver.Compare(a.version, b.version) })
	return rels, nil
}

func publish(root, out string, r release) error {
	gomod := "go.mod"
	if r.dir != "" {
		gomod = r.dir + "/go.mod"
	}
	modData, err := git(root, "show", r.revision+":"+gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(gomod, modData, nil)
	if err != nil {
		return err
	}
	if f.Module == nil {
		return errors.New("go.mod has no module line")
	}
	if len(f.Replace) > 0 {
		return fmt.Errorf("go.mod has a replace directive (%s): the user's build ignores it", f.Replace[0].Old.Path)
	}
	m := module.Version{Path: f.Module.Mod.Path, Version: r.version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(vdir, m.Version)

	var zbuf bytes.Buffer
	if err := zipAt(&zbuf, m, root, r); err != nil {
		return err
	}
	when, err := git(root, "log", "-1", "--format=%cI", r.revision)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(when)))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t.UTC()})
	if err != nil {
		return err
	}
	for _, w := range []struct {
		name string
		data []byte
	}{{base + ".zip", zbuf.Bytes()}, {base + ".mod", modData}, {base + ".info", info}} {
		if err := os.WriteFile(w.name, w.data, 0o644); err != nil {
			return err
		}
	}
	if err := addToList(filepath.Join(vdir, "list"), m.Version); err != nil {
		return err
	}
	fmt.Printf("published %s@%s from %s\n", m.Path, m.Version, r.revision)
	return nil
}

// zipAt writes the module zip of r. It exports the revision's tree with git archive and zips
// its module directory, rather than calling zip.CreateFromVCS, which does not recognise a
// linked worktree (whose .git is a file). CreateFromDir leaves out nested modules, as the go
// command does.
func zipAt(w io.Writer, m module.Version, root string, r release) error {
	tree, err := os.MkdirTemp("", "modproxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	archive, err := git(root, "archive", "--format=tar", r.revision)
	if err != nil {
		return err
	}
	untar := exec.Command("tar", "-x", "-C", tree)
	untar.Stdin = bytes.NewReader(archive)
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	return zip.CreateFromDir(w, m, filepath.Join(tree, filepath.FromSlash(r.dir)))
}

// addToList adds version to the proxy's list file of a module, keeping it sorted.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	slices.SortFunc(versions, semver.Compare)
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func git(root string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
