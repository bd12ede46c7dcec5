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

func TestCheckBulkState(t *testing.T) {
	if s, err := admin.CheckBulkState("", true); s != driver.StateDead || err != nil {
		t.Errorf("dead verb on \"\" = %q, %v; want dead, nil", s, err)
	}
	if _, err := admin.CheckBulkState(driver.StateReady, true); err == nil {
		t.Error("dead verb on ready = nil error; want one")
	}
	if _, err := admin.CheckBulkState(driver.StateDead, false); err == nil {
		t.Error("cancel on dead = nil error; want one")
	}
	if s, err := admin.CheckBulkState("", false); s != "" || err != nil {
		t.Errorf("cancel on \"\" = %q, %v; want \"\", nil", s, err)
	}
}
