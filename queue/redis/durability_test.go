package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// durabilityJobs is the jobs per fsync setting; CORRAL_FAULTS=full asks for more.
func durabilityJobs() int {
	if os.Getenv("CORRAL_FAULTS") == "full" {
		return 20_000
	}
	return 2_000
}

// TestDurabilityAfterKill measures what a SIGKILL of redis-server loses, with appendfsync
// always and everysec: 8 producers enqueue jobs, the server is killed the moment the last
// enqueue was acknowledged, restarted on its directory, and the acknowledged jobs counted;
// then half of them are acked, the server killed and restarted again, and the acks that held
// counted (an ack that did not hold leaves its job stored).
//
// With always, Redis writes the append-only file before it replies: nothing acknowledged may
// be lost, and the test asserts exact counts. With everysec it may reply first: while the
// last second's fsync still runs in the background, it postpones writing the file, for up to
// two seconds (Redis's aof.c, flushAppendOnlyFile), and a SIGKILL then loses those writes. A
// CI run lost 1 of 1,000 acks so. The test asserts what still holds (nothing stored that was
// not enqueued, no acked job back but by a lost ack) and logs the loss; the README states it.
func TestDurabilityAfterKill(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) { checkDurability(t, fsync, durabilityJobs()) })
	}
}

func checkDurability(t *testing.T, fsync string, n int) {
	srv := redistest.Start(t, fsync)
	name := queueName(t)
	ctx := context.Background()
	open := func() *redis.Backend {
		b := redis.New(newClient(t, srv.Addr()), name)
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = b.Close(ctx) })
		return b
	}
	b := open()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				m := driver.Message{ID: strconv.Itoa(i), Body: []byte("x")}
				if _, err := b.Enqueue(ctx, m); err != nil {
					errs <- fmt.Errorf("enqueue %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	took := time.Since(start)
	srv.Kill(t)
	srv.Restart(t)
	b = open()
	st := stats(t, b)
	t.Logf("FAULTS durability appendfsync=%s: %d enqueues acknowledged in %v (%.0f/s), %d stored after SIGKILL and restart (lost %d)",
		fsync, n, took.Round(time.Millisecond), float64(n)/took.Seconds(), st.Ready, n-st.Ready)
	if st.Ready > n || fsync == "always" && st.Ready != n {
		t.Errorf("appendfsync %s: %d of %d acknowledged enqueues survived the SIGKILL", fsync, st.Ready, n)
	}
	stored := st.Ready
	acked := map[string]bool{}
	for range stored / 2 {
		var d driver.Delivery
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := b.Receive(rctx, time.Minute, &d)
		cancel()
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if err := b.Start(ctx, &d); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := b.Ack(ctx, &d); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		acked[d.ID] = true
	}
	srv.Kill(t)
	srv.Restart(t)
	b = open()
	st = stats(t, b)
	// The acked jobs' entries were pending in the group; after the restart the others are
	// ready again (their entries never delivered) and none of the acked ones is stored.
	got := st.Ready + st.InFlight
	t.Logf("FAULTS durability appendfsync=%s: %d acks acknowledged, %d jobs stored after SIGKILL and restart (want %d, lost acks %d)",
		fsync, len(acked), got, stored-len(acked), got-(stored-len(acked)))
	// A lost ack leaves its job stored: between stored-acked (none lost) and stored.
	if got < stored-len(acked) || got > stored || fsync == "always" && got != stored-len(acked) {
		t.Errorf("appendfsync %s: %d stored after %d acks of %d, want %d", fsync, got, len(acked), stored, stored-len(acked))
	}
}

func stats(t *testing.T, b *redis.Backend) driver.Stats {
	t.Helper()
	st, err := b.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}
