package version_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/version"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func up(from int, f func(*driver.Message) (string, error)) version.Upgrade {
	return version.Upgrade{From: from, Desc: "f", F: f}
}

func ok(*driver.Message) (string, error) { return "", nil }

func TestInitUpgradeAndRefusals(t *testing.T) {
	var v version.Set[string]
	v.Init(3, time.Hour, []version.Upgrade{
		up(1, func(m *driver.Message) (string, error) { return "from 1: " + string(m.Body), nil }),
		up(2, func(*driver.Message) (string, error) { panic("boom") }),
	})
	if !v.Understands(3) || !v.Understands(1) || v.Understands(0) || v.Understands(4) {
		t.Error("Understands: want 1, 2 and 3 only")
	}
	if p, err := v.Upgrade(1, &driver.Message{Body: []byte("x")}); p != "from 1: x" || err != nil {
		t.Errorf("Upgrade(1) = %q, %v", p, err)
	}
	if _, err := v.Upgrade(2, &driver.Message{}); err == nil || !strings.Contains(err.Error(), "upgrade from version 2 panicked: boom") {
		t.Errorf("Upgrade(2) = %v; want the panic as an error", err)
	}
	if err := v.NotUnderstood(7); err == nil || !strings.Contains(err.Error(), "version 7 not understood (this queue understands 3, 1, 2)") {
		t.Errorf("NotUnderstood(7) = %v", err)
	}
	for _, c := range []struct {
		ups  []version.Upgrade
		want string
	}{
		{[]version.Upgrade{{From: 1, Desc: "g", F: func(*driver.Message) (int, error) { return 0, nil }}}, "does not return string"},
		{[]version.Upgrade{up(3, nil)}, "not older than the queue's version 3"},
		{[]version.Upgrade{up(1, ok), up(1, ok)}, "given twice"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("Init panicked with %v; want %q", r, c.want)
				}
			}()
			var v version.Set[string]
			v.Init(3, time.Hour, c.ups)
		}()
	}
}

func TestHandBackDelaysGrowThenBury(t *testing.T) {
	var v version.Set[string]
	v.Init(0, time.Minute, nil)
	w := &v.Waits
	now := time.Unix(1700000000, 0)
	var delays []time.Duration
	for {
		d, bury := w.HandBack("j", now)
		if bury {
			break
		}
		delays = append(delays, d)
		now = now.Add(d)
	}
	if len(delays) < 3 || delays[0] != 10*time.Millisecond || delays[len(delays)-1] > 15*time.Second {
		t.Errorf("delays %v; want from 10ms, a quarter of the wait so far, ending within the minute", delays)
	}
	if n := w.Count(now); n != 0 {
		t.Errorf("Count after the bury = %d; want 0", n)
	}
	if _, bury := w.HandBack("k", now); bury || w.Count(now) != 1 || w.Count(now.Add(time.Minute)) != 0 {
		t.Error("a fresh record should count 1, then lapse")
	}
	if w.Wait() != time.Minute {
		t.Errorf("Wait() = %v", w.Wait())
	}
}
