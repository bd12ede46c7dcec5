package queuetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue"
)

// accounting is what check found.
type accounting struct {
	jobs, acked, dead, dupHandled, inflated int
	cut                                     int // innocent jobs whose every run a poison cut
}

// check asserts the exact accounting of a drained scenario: poison lists the jobs that must
// end in the dead letters (with ReasonAttempts, after exactly faultMaxAttempts starts), every
// other job acked once (or handled by a killed worker), no job's attempt beyond its starts but
// for at most hidden ones (starts a kill may have cut before the worker reported them), and
// at most maxDup duplicate handlings (see Faults.inHand).
func (r *faultRun) check(poison map[string]bool, hidden, maxDup int) accounting {
	r.t.Helper()
	r.stopWorkers()
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := countReports(r.events, r.workers)
	a := r.checkJobs(rp, poison)
	r.checkBounds(a, hidden, maxDup)
	r.logDuplicates(rp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.dead = r.checkDeadLetters(ctx, rp, poison, a.cut)
	r.checkNothingStored(ctx)
	return a
}

// jobReports is what the workers reported about each job of a drained scenario.
type jobReports struct {
	acks    map[string]int      // A: its acks
	deads   map[string][]string // D: the reasons it was dead-lettered with
	handled map[string]int      // H: the handler runs that finished its work
	starts  map[string][]int    // S: the attempt number of each handler start
	onDead  map[string]bool     // whether its every S was on a worker the poison took down
}

// countReports counts the workers' events, job by job; a worker that exited with code 3 went
// down with a poison job.
func countReports(events []event, workers []*workerProc) jobReports {
	died := map[int]bool{} // workers that exited through a poison job
	for i, w := range workers {
		died[i] = exitCode(w.err) == 3
	}
	rp := jobReports{acks: map[string]int{}, deads: map[string][]string{}, handled: map[string]int{},
		starts: map[string][]int{}, onDead: map[string]bool{}}
	for _, e := range events {
		switch e.kind {
		case "A":
			rp.acks[e.id]++
		case "D":
			rp.deads[e.id] = append(rp.deads[e.id], e.arg)
		case "H":
			rp.handled[e.id]++
		case "S":
			n, _ := strconv.Atoi(e.arg)
			rp.starts[e.id] = append(rp.starts[e.id], n)
			if _, ok := rp.onDead[e.id]; !ok {
				rp.onDead[e.id] = true
			}
			rp.onDead[e.id] = rp.onDead[e.id] && died[e.worker]
		}
	}
	return rp
}

// diedWith says that job id's every reported start was on a worker the poison took
// down: a job redelivered with the poison (after the same lease) starts with it, and the
// exit can cut its run, counted by Start, before the worker reports it. Its attempts
// were runs, each cut.
func (rp jobReports) diedWith(id string) bool { return rp.onDead[id] }

// inflated says that job id's attempt number went beyond the handler starts reported for it.
func (rp jobReports) inflated(id string) bool {
	n := len(rp.starts[id])
	return n > 0 && slices.Max(rp.starts[id]) > n
}

// checkJobs checks the outcome of every accepted job against the workers' reports, and
// counts the accounting but for the dead letters. r.mu held.
func (r *faultRun) checkJobs(rp jobReports, poison map[string]bool) accounting {
	r.t.Helper()
	var a accounting
	a.jobs = len(r.accepted)
	for id := range r.accepted {
		a.acked += min(rp.acks[id], 1)
		// A job handled twice (its ack lost with a server, or acked just as the server
		// crashed and brought back by it) is acked twice at most: a duplicate handling,
		// counted, not a second outcome.
		a.dupHandled += max(rp.handled[id]-1, rp.acks[id]-1, 0)
		if poison[id] {
			if r.checkPoisonJob(rp, id) {
				a.inflated++
			}
			continue
		}
		if r.checkInnocentJob(rp, id, len(poison) > 0) {
			a.cut++
		}
		if rp.inflated(id) {
			a.inflated++
		}
	}
	return a
}

// checkPoisonJob checks that poison job id was never acked, and reported at least one and at
// most faultMaxAttempts starts; checkDeadLetters checks that its dead letter counts exactly
// faultMaxAttempts runs. A start of one poison job can go unreported when the other takes the
// process down in the same instant (their redeliveries travel together, after the same lease):
// it says whether a start went so, which the caller counts with the hidden ones.
func (r *faultRun) checkPoisonJob(rp jobReports, id string) (hidden bool) {
	r.t.Helper()
	if n := len(rp.starts[id]); rp.acks[id] != 0 || n < 1 || n > faultMaxAttempts {
		r.t.Errorf("poison job %s: acked %d times, started %d times (attempts %v); want dead-lettered after %d starts",
			id, rp.acks[id], n, rp.starts[id], faultMaxAttempts)
	}
	return len(rp.starts[id]) < faultMaxAttempts
}

// checkInnocentJob checks that job id, not a poison job, was acked or handled (by a worker
// killed before it could report the ack), and was not dead-lettered unless the poison cut its
// every run; it says whether it was cut so. poisoned says whether the scenario has poison
// jobs.
func (r *faultRun) checkInnocentJob(rp jobReports, id string, poisoned bool) (cut bool) {
	r.t.Helper()
	switch {
	case len(rp.deads[id]) != 0 && rp.diedWith(id):
		// Its handler ran every attempt in a process the poison took down: each
		// attempt was a run, and was cut.
		return true
	case len(rp.deads[id]) != 0 && poisoned && len(rp.starts[id]) == 0:
		// Dead-lettered with not one start reported: each start (counted by Start) was
		// hidden by a poison exit, the only exit of the scenario, before its handler could
		// report it. A job received with the poison has its lease end with the poison's,
		// comes back with it, and starts again as the poison exits: its every run was cut.
		return true
	case len(rp.deads[id]) != 0:
		r.t.Errorf("job %s dead-lettered (%v), never failing: attempts %v", id, rp.deads[id], rp.starts[id])
	case rp.acks[id] == 0 && rp.handled[id] == 0 && (rp.diedWith(id) || poisoned && len(rp.starts[id]) == 0):
		// The same, buried by a process the poison took down before it could report the
		// dead letter: checkDeadLetters finds it (the dead letters are the poison jobs and
		// the cut ones, exactly), so that a job lost, not buried, fails there.
		return true
	case rp.acks[id] == 0 && rp.handled[id] == 0:
		r.t.Errorf("job %s accepted, never handled (events %v)", id, r.eventsOf(id))
	}
	return false
}

// checkBounds holds a's counts to the scenario's bounds: at most hidden jobs with attempt
// numbers beyond their starts, and at most maxDup duplicate handlings.
func (r *faultRun) checkBounds(a accounting, hidden, maxDup int) {
	r.t.Helper()
	if a.inflated > hidden {
		r.t.Errorf("%d jobs had attempt numbers beyond their handler starts, want at most %d (starts a kill hid)", a.inflated, hidden)
	}
	if a.dupHandled > maxDup {
		r.t.Errorf("%d duplicate handlings, want at most %d (the jobs in flight at the faults)", a.dupHandled, maxDup)
	}
}

// logDuplicates logs the events of every job handled or acked twice, with CORRAL_FAULTS_DEBUG
// set in the environment. r.mu held.
func (r *faultRun) logDuplicates(rp jobReports) {
	r.t.Helper()
	if os.Getenv("CORRAL_FAULTS_DEBUG") == "" {
		return
	}
	for id := range r.accepted {
		if rp.handled[id] > 1 || rp.acks[id] > 1 {
			r.t.Logf("dup %s: %v", id, r.eventsOf(id))
		}
	}
}

// checkDeadLetters checks that the queue's dead letters are the poison jobs and the cut
// innocent ones (cutJobs of them), all with ReasonAttempts, and returns how many there are.
// r.mu held.
func (r *faultRun) checkDeadLetters(ctx context.Context, rp jobReports, poison map[string]bool, cutJobs int) int {
	r.t.Helper()
	dls := r.deadLetters(ctx)
	var deadIDs []string
	for _, dl := range dls {
		deadIDs = append(deadIDs, dl.Job.ID)
		// Cut as checkInnocentJob counts it: every reported start on a worker the poison took
		// down, or not one start reported (each hidden by a poison exit).
		cut := !poison[dl.Job.ID] && (rp.diedWith(dl.Job.ID) || len(poison) > 0 && len(rp.starts[dl.Job.ID]) == 0)
		if !poison[dl.Job.ID] && !cut || dl.Reason != queue.ReasonAttempts || !runsRecorded(dl) {
			r.t.Errorf("dead letter %s (%s, attempt %d, history %+v; events %v): want only the poison jobs, with reason "+
				"attempts, attempt %d and one history entry per run",
				dl.Job.ID, dl.Reason, dl.Job.Attempt, dl.History, r.eventsOf(dl.Job.ID), faultMaxAttempts)
		}
	}
	if len(deadIDs) != len(poison)+cutJobs {
		r.t.Errorf("%d dead letters %v, want the %d poison jobs and the %d innocent ones the poison cut", len(deadIDs), deadIDs, len(poison), cutJobs)
	}
	return len(deadIDs)
}

// runsRecorded reports whether dl, dead-lettered for its attempts, has the attempts contract's
// record of them: attempt faultMaxAttempts (its handler runs), and one history entry per run,
// numbered from 1 (each run that took its process down has the lease-expired entry its backend
// recorded as it took the job back).
func runsRecorded(dl queue.DeadLetter[string]) bool {
	if dl.Job.Attempt != faultMaxAttempts || len(dl.History) != faultMaxAttempts {
		return false
	}
	for i, a := range dl.History {
		if a.Number != i+1 {
			return false
		}
	}
	return true
}

// deadLetters lists the queue's dead letters, listing them again from the start while the
// backend answers ErrUnavailable, within the recovery bound (see untilAvailable).
func (r *faultRun) deadLetters(ctx context.Context) []queue.DeadLetter[string] {
	r.t.Helper()
	var dls []queue.DeadLetter[string]
	err := untilAvailable(ctx, r.f.RecoveryBound(), func(ctx context.Context) error {
		dls = dls[:0]
		for dl, err := range r.q.DeadLetters(ctx) {
			if err != nil {
				return err
			}
			dls = append(dls, dl)
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("DeadLetters: %v", err)
	}
	return dls
}

// checkNothingStored checks that the queue stores nothing: no job ready, in flight or delayed.
// Stats is asked again while the backend answers ErrUnavailable, within the recovery bound.
func (r *faultRun) checkNothingStored(ctx context.Context) {
	r.t.Helper()
	var s queue.Stats
	err := untilAvailable(ctx, r.f.RecoveryBound(), func(ctx context.Context) (err error) {
		s, err = r.q.Stats(ctx)
		return err
	})
	if err != nil || s.Ready+s.InFlight+s.Delayed != 0 {
		r.t.Errorf("stats %+v (%v): want nothing stored", s, err)
	}
}

// eventsOf lists the events of job id, as seconds.milliseconds worker:kind+arg. r.mu held.
func (r *faultRun) eventsOf(id string) []string {
	var out []string
	for _, e := range r.events {
		if e.id == id {
			out = append(out, fmt.Sprintf("%s %d:%s%s", e.at.Format("05.000"), e.worker, e.kind, e.arg))
		}
	}
	return out
}

// report logs a scenario's numbers.
func (r *faultRun) report(scenario string, a accounting, extra string) {
	r.mu.Lock()
	enqErrs, workers := r.enqErrs, len(r.workers)
	r.mu.Unlock()
	r.t.Logf("FAULTS %s nodes=%d: %d jobs, %d acked, %d dead letters (%d of them innocent jobs every run of which the "+
		"poison cut), %d duplicate handlings, %d attempts beyond starts, %d producer retries after ErrUnavailable, "+
		"%d worker processes; %s",
		scenario, r.f.Broker.Nodes(), a.jobs, a.acked, a.dead, a.cut, a.dupHandled, a.inflated, enqErrs, workers, extra)
}
