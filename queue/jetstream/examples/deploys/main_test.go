package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example on its embedded server and checks what it reports: the deploy lost
// nothing, ran nothing twice, spent no attempt on a v2 order in the v1 consumer; the share gave
// users about six turns in seven and the backfill at most one worker.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run("", &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"deploy: v2 orders handled by the v1 consumer: 0\n",
		"deploy: every order handled once: true, each at its first attempt: true\n",
		"deploy: dead letters 0, left in the queue 0\n",
		"share: drained, all 120 jobs handled: true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	m := regexp.MustCompile(`deploy: v1 consumer handled (\d+) orders, v2 consumer (\d+) \((\d+) of them v1`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no deploy line in:\n%s", got)
	}
	v1, _ := strconv.Atoi(m[1])
	v2, _ := strconv.Atoi(m[2])
	up, _ := strconv.Atoi(m[3])
	if v1+v2 != 30 || v1+up != 10 {
		t.Errorf("v1 handled %d, v2 %d (%d upgraded): want 30 in all, the 10 v1 orders by v1 or upgraded", v1, v2, up)
	}
	m = regexp.MustCompile(`share: of the first 60 jobs, (\d+) were users'`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no share line in:\n%s", got)
	}
	// 6 in 7 of 60 is 51.4; real time lets a turn or two slip.
	if u, _ := strconv.Atoi(m[1]); u < 46 || u > 56 {
		t.Errorf("users got %d of the first 60 jobs, want about 51", u)
	}
	if !strings.Contains(got, "share: backfill (weight 1, at most 1 at once)") {
		t.Errorf("no backfill share line in:\n%s", got)
	}
}
