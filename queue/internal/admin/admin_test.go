package admin_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/admin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCursorRoundTrip(t *testing.T) {
	c := driver.Cursor{EnqueuedAt: time.Unix(1700000000, 123456789), ID: "a.b/c?d"}
	s := admin.EncodeCursor(c)
	got, err := admin.DecodeCursor(s)
	if err != nil || !got.EnqueuedAt.Equal(c.EnqueuedAt) || got.ID != c.ID {
		t.Fatalf("DecodeCursor(EncodeCursor(%v)) = %v, %v", c, got, err)
	}
	for _, bad := range []string{"!", admin.EncodeCursor(driver.Cursor{})[:3], "bm9kb3Q"} { // "nodot"
		if _, err := admin.DecodeCursor(bad); err == nil {
			t.Errorf("DecodeCursor(%q) = nil error; want one", bad)
		}
	}
}

func TestPrepare(t *testing.T) {
	now := time.Unix(1700000000, 0)
	var f driver.Filter
	if err := admin.Prepare(&f, time.Minute, "", now); err != nil || f.Limit != admin.DefaultPage || !f.EnqueuedBefore.Equal(now.Add(-time.Minute)) {
		t.Errorf("Prepare of a zero filter: %+v, %v; want the default page and a minute's age", f, err)
	}
	for _, limit := range []int{-1, driver.MaxPage + 1} {
		f := driver.Filter{Limit: limit}
		if err := admin.Prepare(&f, 0, "", now); err == nil {
			t.Errorf("Prepare with Limit %d = nil error; want one", limit)
		}
	}
	f = driver.Filter{}
	if err := admin.Prepare(&f, 0, "junk!", now); err == nil {
		t.Error("Prepare with a malformed cursor = nil error; want one")
	}
}

func TestCheckBulk(t *testing.T) {
	var f driver.Filter
	if err := admin.CheckBulk(&f, "", true); f.State != driver.StateDead || err != nil {
		t.Errorf("dead verb on \"\": state %q, %v; want dead, nil", f.State, err)
	}
	for _, c := range []struct {
		state driver.JobState
		dead  bool
	}{{driver.StateReady, true}, {"awaiting_version", true}, {driver.StateDead, false}} {
		f := driver.Filter{State: c.state}
		if err := admin.CheckBulk(&f, c.state, c.dead); err == nil {
			t.Errorf("CheckBulk(%q, dead %v) = nil error; want one", c.state, c.dead)
		}
	}
	f = driver.Filter{}
	if err := admin.CheckBulk(&f, "", false); f.State != "" || err != nil {
		t.Errorf("cancel on \"\": state %q, %v; want \"\", nil", f.State, err)
	}
}
