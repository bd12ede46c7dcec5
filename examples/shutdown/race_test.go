//go:build race

package main

// raceEnabled says whether the test runs with the race detector, so that the
// binary under test is built with it too.
const raceEnabled = true
