// Package readmetest keeps the Go snippets of corral's READMEs and the tests that compile them
// in step. Each README's snippets are copied, as written, into readme_test.go files, with stubs
// for what they call; Check fails when a line of a snippet is in none of those files, so that a
// README edit the tests did not follow, or a test edit the README did not, fails the tests.
//
// Each module's readme_test.go calls Check for its own README; this package's tests check the
// root README against the readme_test.go files of the packages its snippets use. Go's internal
// rule goes by import path, so every module of this repository may import it, and no user can.
//
// readmetest.go holds Check and the reading of snippets.
package readmetest
