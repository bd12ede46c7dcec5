package postgres

import "strings"

// The SQL of a Backend, with {{schema}} rendered by New. $1 is the queue's name in every
// statement that has it; durations are microseconds, as float8 (exact up to 285 years).

// statements holds the rendered SQL of one Backend.
type statements struct {
	insert, insertDedup, insertKeyed, insertKeyedDedup string
	insertBatch, insertBatchDedup, reserveBatch        string
	evictBatch                                         string
	reserve, evict                                     string
	claim, unclaim                                     string
	start, startMany, startOne, extend, leaseOf        string
	ack, ackMany, ackOne, ackCounted, ackTx            string
	ackTxCounted                                       string
	txStatus                                           string
	nack, snooze, release                              string
	bury, buryCount, evictDead                         string
	deadPage, redriveTake, redriveCount                string
	purge                                              string
	stats                                              string
	prune, pruneUniques                                string
	uniqueClaim, uniqueMark                            string
	rateRow, takeStart                                 string
	agreeInsert, agreeSelect, reconfigure, setLease    string
	canceledOf                                         string
	adm                                                adminStatements // admin.go
}

// usInterval makes a duration parameter in microseconds an interval.
const usInterval = " * interval '1 microsecond'"

// dueSQL is how long until a delayed job of queue $1 is due or a lease ends, in seconds (NULL:
// nothing will; not positive: a lease ended, and the job waits to be taken back).
const dueSQL = `extract(epoch FROM least(
	(SELECT min(ready_at) FROM {{schema}}.jobs WHERE queue = $1 AND lease_until IS NULL AND ready_at > now()),
	(SELECT min(lease_until) FROM {{schema}}.jobs WHERE queue = $1 AND lease_until IS NOT NULL)) - now())::float8`

// The columns of a job as Receive returns them.
const jobColumns = `j.seq, j.id, coalesce(j.key, ''), j.version, j.headers::text, j.body, j.enqueued_at, j.not_before, j.start_by, j.attempts, j.lease, j.deliveries, j.snoozes`

// insertSQL returns the statement that stores a job ($2 id, $3 key or NULL, $4 body, $5
// enqueued at, $6 not before or NULL, $7 start by or NULL, $9 payload version, $10 headers as
// JSON text or NULL) unless its ID is stored, notifies the channel $8 (at commit), and returns
// true, the job's seq and the notification's text; or no row if the ID is taken. With dedup,
// $11 is the horizon: the ID
// is recorded in ids, and the job is stored only if the ID was not enqueued within the horizon
// (nor is stored: a refused job does not refresh the ID's record). With keyed, the statement
// first tries to take the key's advisory lock, held to the end of the transaction, so that the
// jobs of a key are numbered in the order their enqueues commit (Receive delivers a job only
// once the key's jobs numbered before it are gone); it does not wait for it: if another
// transaction holds it, the statement stores and records nothing and returns one row of false
// and NULLs (see errKeyBusy). With keyed, an ID taken is one row of true and NULLs.
func insertSQL(dedup, keyed bool) string {
	var b strings.Builder
	b.WriteString("WITH ")
	lock := ""
	if keyed {
		b.WriteString("l AS (SELECT pg_try_advisory_xact_lock(hashtext('corral ' || $1::text), hashtext($3::text)) AS ok),\n")
		lock = " AND (SELECT ok FROM l)"
	}
	if dedup {
		b.WriteString(`h AS (
	INSERT INTO {{schema}}.ids (queue, id, at)
	SELECT $1::text, $2::text, now()
	WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.jobs WHERE queue = $1 AND id = $2)` + lock + `
	ON CONFLICT (queue, id) DO UPDATE SET at = EXCLUDED.at
		WHERE {{schema}}.ids.at <= now() - $11::float8` + usInterval + `
	RETURNING 1
), `)
	}
	b.WriteString(`j AS (
	INSERT INTO {{schema}}.jobs (queue, id, key, version, headers, body, enqueued_at, not_before, start_by, ready_at)
	SELECT $1::text, $2::text, $3::text, $9::bigint, $10::text::jsonb, $4::bytea, $5::timestamptz, $6::timestamptz, $7::timestamptz,
		greatest($6::timestamptz, now())`)
	switch {
	case dedup:
		b.WriteString("\n\tWHERE EXISTS (SELECT 1 FROM h)")
	case keyed:
		b.WriteString("\n\tWHERE (SELECT ok FROM l)")
	}
	b.WriteString("\n\tON CONFLICT (queue, id) DO NOTHING\n\tRETURNING seq\n)\n")
	if keyed {
		b.WriteString("SELECT l.ok, j.seq, CASE WHEN j.seq IS NOT NULL THEN pg_notify($8, $1)::text END FROM l LEFT JOIN j ON true")
	} else {
		b.WriteString("SELECT true, seq, pg_notify($8, $1)::text FROM j")
	}
	return b.String()
}

// insertBatchSQL returns the statement that stores a batch of jobs (arrays, one element a job, no
// ID twice: $2 ids, $3 keys, ” for none, $4 bodies, $5 enqueued at, $6 not before or NULL, $7 start
// by or NULL, $9 payload versions, $10 headers as JSON text or NULL) but those whose ID is stored,
// notifies the channel $8 (at commit) if it stored any, and returns the IDs it did not store, in the
// batch's order. With dedup, $11 is the horizon, as in insertSQL. The keys' advisory locks (as insertSQL's) are taken first,
// in the order of their numbers, so that two batches never wait for each other in a cycle; the jobs
// are numbered in the batch's order.
func insertBatchSQL(dedup bool) string {
	var b strings.Builder
	b.WriteString(`WITH b AS (
	SELECT * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $9::bigint[], $10::text[])
		WITH ORDINALITY AS b (id, key, body, enqueued_at, not_before, start_by, version, headers, ord)
), l AS (
	SELECT pg_advisory_xact_lock(hashtext('corral ' || $1::text), h)
	FROM (SELECT DISTINCT hashtext(key) AS h FROM b WHERE key <> '' ORDER BY 1) AS k
), `)
	if dedup {
		b.WriteString(`h AS (
	INSERT INTO {{schema}}.ids (queue, id, at)
	SELECT $1::text, b.id, now() FROM b
	WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.jobs WHERE queue = $1 AND id = b.id)
	ON CONFLICT (queue, id) DO UPDATE SET at = EXCLUDED.at
		WHERE {{schema}}.ids.at <= now() - $11::float8` + usInterval + `
	RETURNING id
), `)
	}
	b.WriteString(`j AS (
	INSERT INTO {{schema}}.jobs (queue, id, key, version, headers, body, enqueued_at, not_before, start_by, ready_at)
	SELECT $1::text, id, nullif(key, ''), version, headers::jsonb, body, enqueued_at, not_before, start_by, greatest(not_before, now())
	FROM b WHERE (SELECT count(*) FROM l) >= 0`)
	if dedup {
		b.WriteString(" AND id IN (SELECT id FROM h)")
	}
	b.WriteString(`
	ORDER BY ord
	ON CONFLICT (queue, id) DO NOTHING
	RETURNING id
)
SELECT coalesce((SELECT array_agg(b.id ORDER BY b.ord) FROM b WHERE b.id NOT IN (SELECT id FROM j)), '{}'),
	(SELECT count(pg_notify($8, $1)) FROM (SELECT 1 FROM j LIMIT 1) AS n)`)
	return b.String()
}

func newStatements(schema string) statements {
	s := statements{
		insert:           insertSQL(false, false),
		insertDedup:      insertSQL(true, false),
		insertKeyed:      insertSQL(false, true),
		insertKeyedDedup: insertSQL(true, true),
		insertBatch:      insertBatchSQL(false),
		insertBatchDedup: insertBatchSQL(true),

		// A batch's room: $2 jobs counted in, and how many too many that makes (not
		// positive: none).
		reserveBatch: `UPDATE {{schema}}.queues SET stored = stored + $2 WHERE name = $1 RETURNING stored - capacity`,
		// DropOldest for a batch: evict for $4 jobs, none of the batch's ($2 IDs).
		evictBatch: `WITH v AS (
	DELETE FROM {{schema}}.jobs WHERE seq IN (
		SELECT seq FROM {{schema}}.jobs
		WHERE queue = $1 AND lease_until IS NULL AND id <> ALL ($2::text[])
		ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
	RETURNING *
)
INSERT INTO {{schema}}.dead AS d (queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, reason, history, at)
SELECT queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, 'evicted',
	history || jsonb_build_array(jsonb_build_object('n', 0, 's', now(), 'e', now(), 'err', $3::text)), now()
FROM v ORDER BY seq
ON CONFLICT (queue, id) DO UPDATE SET dseq = nextval('{{schema}}.dead_seq'), key = EXCLUDED.key, version = EXCLUDED.version, headers = EXCLUDED.headers, body = EXCLUDED.body,
	enqueued_at = EXCLUDED.enqueued_at, not_before = EXCLUDED.not_before, start_by = EXCLUDED.start_by,
	attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, history = EXCLUDED.history, at = EXCLUDED.at
RETURNING d.id, (d.xmax = 0)`,

		// Capacity: take room for one job ($2 the jobs to take it for), or none if full.
		reserve: `UPDATE {{schema}}.queues SET stored = stored + $2 WHERE name = $1 AND stored + $2 <= capacity RETURNING stored`,
		// DropOldest: the oldest job not leased but the one being enqueued ($2), moved to
		// the dead letters with reason evicted and an entry of attempt number 0 (no run) with
		// the error $3 appended to its history. It returns
		// the victim's ID and whether its dead letter is new (not a replacement).
		evict: `WITH v AS (
	DELETE FROM {{schema}}.jobs WHERE seq = (
		SELECT seq FROM {{schema}}.jobs
		WHERE queue = $1 AND lease_until IS NULL AND seq <> $2
		ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
	RETURNING *
)
INSERT INTO {{schema}}.dead AS d (queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, reason, history, at)
SELECT queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, 'evicted',
	history || jsonb_build_array(jsonb_build_object('n', 0, 's', now(), 'e', now(), 'err', $3::text)), now()
FROM v
ON CONFLICT (queue, id) DO UPDATE SET dseq = nextval('{{schema}}.dead_seq'), key = EXCLUDED.key, version = EXCLUDED.version, headers = EXCLUDED.headers, body = EXCLUDED.body,
	enqueued_at = EXCLUDED.enqueued_at, not_before = EXCLUDED.not_before, start_by = EXCLUDED.start_by,
	attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, history = EXCLUDED.history, at = EXCLUDED.at
RETURNING d.id, (d.xmax = 0)`,

		// Receive: take back the expired leases first (a lease on which a handler started
		// spent its attempt, which the history records, $4 the error text), 100 at most,
		// then lease ($2 µs) the first $3 waiting jobs, in enqueue order, that are due and
		// first of their key's stored jobs, for $3 receivers at once. The jobs taken back are
		// not among those leased: the statement sees the table as it was when it began, and
		// a later claim delivers them. SKIP LOCKED: receivers never wait for each other. It
		// returns a row per job leased, in enqueue order: true, the job, whether another job
		// is ready (one more row it locked, not leased, for an instant: a receiver to wake),
		// if it found fewer than $3 jobs, the seconds until a delayed job is due or a lease
		// ends (see dueSQL), and the count of jobs taken back; or, if it found none, one row
		// of false, placeholders, false, those seconds and that count: a receiver that finds
		// nothing learns how long to wait in the same round trip.
		claim: `WITH x AS (
	UPDATE {{schema}}.jobs AS j SET lease = j.lease + 1, lease_until = NULL, ready_at = now(),
		history = CASE WHEN j.started = j.lease
			THEN j.history || jsonb_build_array(jsonb_build_object('n', j.attempts, 's', j.lease_start, 'e', now(), 'err', $4::text))
			ELSE j.history END
	WHERE j.seq IN (
		SELECT seq FROM {{schema}}.jobs
		WHERE queue = $1 AND lease_until <= now()
		ORDER BY lease_until LIMIT 100 FOR UPDATE SKIP LOCKED)
	RETURNING 1
), c AS (
	SELECT seq FROM {{schema}}.jobs AS w
	WHERE queue = $1 AND lease_until IS NULL AND ready_at <= now() AND NOT canceled
		AND NOT (SELECT paused FROM {{schema}}.queues WHERE name = $1)
		AND (key IS NULL OR NOT EXISTS (
			SELECT 1 FROM {{schema}}.jobs AS k WHERE k.queue = $1 AND k.key = w.key AND k.seq < w.seq))
	ORDER BY seq LIMIT $3::int + 1
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE {{schema}}.jobs AS j SET lease = j.lease + 1, lease_until = now() + $2::float8` + usInterval + `,
		lease_start = now(), deliveries = j.deliveries + 1
	WHERE j.seq IN (SELECT seq FROM c ORDER BY seq LIMIT $3)
	RETURNING ` + jobColumns + `
), n AS (SELECT (SELECT count(*) FROM c) > $3 AS more,
	CASE WHEN (SELECT count(*) FROM u) < $3 THEN ` + dueSQL + ` END AS due,
	(SELECT count(*) FROM x) AS rescued)
SELECT * FROM (SELECT true, u.*, n.more, n.due, n.rescued FROM u, n ORDER BY u.seq) AS got
UNION ALL
SELECT false, 0::bigint, '', '', 0::bigint, NULL::text, ''::bytea, now(), NULL::timestamptz, NULL::timestamptz, 0, 0::bigint, 0, 0, false, n.due, n.rescued
FROM n WHERE NOT EXISTS (SELECT 1 FROM u)`,
		// A job claimed for a receiver that left before it got it: waiting again, as if
		// never delivered, and a receiver woken for it.
		unclaim: `UPDATE {{schema}}.jobs SET lease = lease + 1, lease_until = NULL, deliveries = deliveries - 1
WHERE seq = $2 AND lease = $3
RETURNING pg_notify($4, $1)::text`,

		// Start spends an attempt once per lease; only while the lease runs.
		start: `UPDATE {{schema}}.jobs SET attempts = attempts + CASE WHEN started = lease THEN 0 ELSE 1 END, started = lease
WHERE seq = $1 AND lease = $2 AND lease_until > now()`,
		// startMany is start for the leases of $1 (seqs) and $2 (lease numbers), and returns
		// the seqs of the jobs it started. It skips a job whose row a transaction holds (see
		// group): start alone then decides. startOne is startMany for one lease.
		startMany: `UPDATE {{schema}}.jobs AS j SET attempts = j.attempts + CASE WHEN j.started = j.lease THEN 0 ELSE 1 END, started = j.lease
FROM (SELECT seq FROM {{schema}}.jobs AS w JOIN unnest($1::bigint[], $2::bigint[]) AS k (s, l) ON w.seq = k.s AND w.lease = k.l
	WHERE w.lease_until > now() FOR UPDATE OF w SKIP LOCKED) AS x
WHERE j.seq = x.seq
RETURNING j.seq`,
		startOne: `UPDATE {{schema}}.jobs SET attempts = attempts + CASE WHEN started = lease THEN 0 ELSE 1 END, started = lease
WHERE seq = (SELECT seq FROM {{schema}}.jobs WHERE seq = $1 AND lease = $2 AND lease_until > now() FOR UPDATE SKIP LOCKED)`,
		// Extend renews a lease that holds, unless a transaction holds the job's row (AckTx):
		// it does not wait for it (see leaseOf). It returns whether an operator cancelled
		// the job (see admin.go).
		extend: `UPDATE {{schema}}.jobs SET lease_until = now() + $3::float8` + usInterval + `
WHERE seq = (SELECT seq FROM {{schema}}.jobs WHERE seq = $1 AND lease = $2 FOR UPDATE SKIP LOCKED)
RETURNING canceled`,
		// canceledOf: whether the job of the lease ($1 seq, $2 lease) was cancelled.
		canceledOf: `SELECT canceled FROM {{schema}}.jobs WHERE seq = $1 AND lease = $2`,
		leaseOf:    `SELECT lease FROM {{schema}}.jobs WHERE seq = $1`,

		// Ack deletes the job of the lease; a job with a key wakes the receivers, for the
		// key's next job. It returns the rows deleted. ackCounted also gives back the room
		// of a queue with a capacity.
		ack: `WITH d AS (DELETE FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 RETURNING key)
SELECT (SELECT count(*) FROM d), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL)`,
		// ackMany is ack for the leases of $2 (seqs) and $3 (lease numbers) of a queue
		// without a capacity, and returns the seqs of the jobs it deleted. It skips a job
		// whose row a transaction holds (see group): ack alone then decides. ackOne is
		// ackMany for one lease.
		ackMany: `WITH d AS (DELETE FROM {{schema}}.jobs AS j USING (
	SELECT seq FROM {{schema}}.jobs AS w JOIN unnest($2::bigint[], $3::bigint[]) AS k (s, l) ON w.seq = k.s AND w.lease = k.l
	FOR UPDATE OF w SKIP LOCKED) AS x
WHERE j.seq = x.seq
RETURNING j.seq, j.key)
SELECT coalesce(array_agg(seq), '{}'), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL) FROM d`,
		ackOne: `WITH d AS (DELETE FROM {{schema}}.jobs WHERE seq = (
	SELECT seq FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 FOR UPDATE SKIP LOCKED)
RETURNING seq, key)
SELECT coalesce(array_agg(seq), '{}'), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL) FROM d`,
		// ackTx is ack in the caller's transaction, which it returns the ID of.
		ackTx: `WITH d AS (DELETE FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 RETURNING key)
SELECT (SELECT count(*) FROM d), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL), txid_current()`,
		ackTxCounted: `WITH d AS (DELETE FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 RETURNING key),
u AS (UPDATE {{schema}}.queues SET stored = stored - 1 WHERE name = $1 AND EXISTS (SELECT 1 FROM d))
SELECT (SELECT count(*) FROM d), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL), txid_current()`,
		txStatus: `SELECT txid_status($1)`,
		ackCounted: `WITH d AS (DELETE FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 RETURNING key),
u AS (UPDATE {{schema}}.queues SET stored = stored - 1 WHERE name = $1 AND EXISTS (SELECT 1 FROM d))
SELECT (SELECT count(*) FROM d), (SELECT count(pg_notify($4, $1)) FROM d WHERE key IS NOT NULL)`,

		// Nack: ready again after $4 µs, the failed attempt $5 recorded.
		nack: `UPDATE {{schema}}.jobs SET lease = lease + 1, lease_until = NULL,
	ready_at = now() + $4::float8` + usInterval + `, history = history || $5::jsonb
WHERE seq = $2 AND lease = $3 AND NOT canceled
RETURNING pg_notify($6, $1)::text`,
		// Snooze (a Nack of a snoozed attempt): as nack, but the attempt of a started lease is
		// given back, as by release, and the snooze counted.
		snooze: `UPDATE {{schema}}.jobs SET lease = lease + 1, lease_until = NULL,
	ready_at = now() + $4::float8` + usInterval + `, history = history || $5::jsonb,
	attempts = attempts - CASE WHEN started = lease THEN 1 ELSE 0 END, started = 0, snoozes = snoozes + 1
WHERE seq = $2 AND lease = $3 AND NOT canceled
RETURNING pg_notify($6, $1)::text`,
		// Release: ready again after $5 µs, the attempt of a started lease given back.
		release: `UPDATE {{schema}}.jobs SET lease = lease + 1, lease_until = NULL,
	ready_at = now() + $5::float8` + usInterval + `,
	attempts = attempts - CASE WHEN started = lease THEN 1 ELSE 0 END, started = 0
WHERE seq = $2 AND lease = $3 AND NOT canceled
RETURNING pg_notify($4, $1)::text`,

		// Bury: the job of the lease to the dead letters ($4 reason, $5 the final attempt as
		// a history to append, '[]' for none), with its attempts (handler runs). It returns
		// whether the dead letter is new, and notifies the channel $6 if the job had a key
		// (its next job may be delivered).
		bury: `WITH v AS (DELETE FROM {{schema}}.jobs WHERE seq = $2 AND lease = $3 RETURNING *)
INSERT INTO {{schema}}.dead AS d (queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, reason, history, at)
SELECT queue, id, key, version, headers, body, enqueued_at, not_before, start_by, attempts, $4, history || $5::jsonb, now() FROM v
ON CONFLICT (queue, id) DO UPDATE SET dseq = nextval('{{schema}}.dead_seq'), key = EXCLUDED.key, version = EXCLUDED.version, headers = EXCLUDED.headers, body = EXCLUDED.body,
	enqueued_at = EXCLUDED.enqueued_at, not_before = EXCLUDED.not_before, start_by = EXCLUDED.start_by,
	attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, history = EXCLUDED.history, at = EXCLUDED.at
RETURNING (d.xmax = 0), CASE WHEN d.key IS NOT NULL THEN pg_notify($6, $1)::text END`,
		// The counts after jobs left for the dead letters: $2 new dead letters, $3 jobs that
		// left a queue with a capacity. It returns the dead letters beyond the limit.
		buryCount: `UPDATE {{schema}}.queues SET dead = dead + $2, stored = stored - $3 WHERE name = $1
RETURNING greatest(dead - dead_letter_limit, 0)`,
		// The oldest $2 dead letters, deleted, their IDs oldest first, as a JSON array.
		evictDead: `WITH v AS (
	DELETE FROM {{schema}}.dead WHERE queue = $1 AND dseq IN (
		SELECT dseq FROM {{schema}}.dead WHERE queue = $1 ORDER BY dseq LIMIT $2)
	RETURNING id, dseq
), u AS (UPDATE {{schema}}.queues SET dead = dead - (SELECT count(*) FROM v) WHERE name = $1)
SELECT coalesce(json_agg(id ORDER BY dseq), '[]')::text FROM v`,

		// A page of dead letters after burial number $2.
		deadPage: `SELECT dseq, id, coalesce(key, ''), version, headers::text, body, enqueued_at, not_before, start_by, attempts, reason, history, at
FROM {{schema}}.dead WHERE queue = $1 AND dseq > $2 ORDER BY dseq LIMIT $3`,
		redriveTake:  `DELETE FROM {{schema}}.dead WHERE queue = $1 AND id = $2 RETURNING coalesce(key, ''), version, headers::text, body`,
		redriveCount: `UPDATE {{schema}}.queues SET dead = dead - 1 WHERE name = $1`,
		purge: `WITH v AS (DELETE FROM {{schema}}.dead WHERE queue = $1 AND id = $2 RETURNING 1)
UPDATE {{schema}}.queues SET dead = dead - 1 WHERE name = $1 AND EXISTS (SELECT 1 FROM v) RETURNING dead`,

		stats: `SELECT
	count(*) FILTER (WHERE (lease_until IS NULL AND ready_at <= now()) OR lease_until <= now()),
	count(*) FILTER (WHERE lease_until > now()),
	count(*) FILTER (WHERE lease_until IS NULL AND ready_at > now()),
	min(enqueued_at),
	(SELECT dead FROM {{schema}}.queues WHERE name = $1),
	coalesce((SELECT paused FROM {{schema}}.queues WHERE name = $1), false)
FROM {{schema}}.jobs WHERE queue = $1`,

		// The IDs past the horizon ($2 µs), forgotten a batch at a time.
		prune: `DELETE FROM {{schema}}.ids WHERE ctid IN (
	SELECT ctid FROM {{schema}}.ids WHERE queue = $1 AND at <= now() - $2::float8` + usInterval + ` LIMIT 1000)`,

		// The unique keys whose period ended, forgotten a batch at a time.
		pruneUniques: `DELETE FROM {{schema}}.uniques WHERE ctid IN (
	SELECT ctid FROM {{schema}}.uniques WHERE queue = $1 AND until <= now() LIMIT 1000)`,
		// Claims the unique key $2 for the job $3: a key no job holds, or held for a period
		// that ended. It returns the holder and whether this claimed it; no row when the
		// holder committed after the statement began (ask again).
		uniqueClaim: `WITH c AS (INSERT INTO {{schema}}.uniques AS u (queue, key, id) VALUES ($1, $2, $3)
	ON CONFLICT (queue, key) DO UPDATE SET id = EXCLUDED.id, until = NULL
	WHERE u.until IS NOT NULL AND u.until <= now()
	RETURNING u.id)
SELECT id, true FROM c
UNION ALL
SELECT id, false FROM {{schema}}.uniques WHERE queue = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM c)`,
		// Marks the job $2, just stored, with its unique key $3 and period $4 µs.
		uniqueMark: `UPDATE {{schema}}.jobs SET unique_key = $3, unique_for_us = $4 WHERE queue = $1 AND id = $2`,

		// The rate limit's row of the queue, made if missing.
		rateRow: `INSERT INTO {{schema}}.rates (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING`,
		// Takes a start if fewer than $2 fall within the last $3 µs: the row, locked, keeps the
		// starts of the window. It returns whether it took one, and else how long (in seconds)
		// until one leaves the window.
		takeStart: `WITH w AS (SELECT array(SELECT s FROM unnest(starts) AS s WHERE s > now() - $3::float8` + usInterval + ` ORDER BY s) AS a
	FROM {{schema}}.rates WHERE queue = $1 FOR UPDATE),
u AS (UPDATE {{schema}}.rates SET starts = (SELECT a FROM w) || now()
	WHERE queue = $1 AND cardinality((SELECT a FROM w)) < $2 RETURNING 1)
SELECT EXISTS (SELECT 1 FROM u),
	coalesce(extract(epoch FROM (SELECT a[cardinality(a) - $2 + 1] FROM w) + $3::float8` + usInterval + ` - now())::float8, 0)`,

		agreeInsert: `INSERT INTO {{schema}}.queues (name, capacity, overflow, dedup_horizon_us, dead_letter_limit)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING`,
		agreeSelect: `SELECT capacity, overflow, dedup_horizon_us, dead_letter_limit, lease_us FROM {{schema}}.queues WHERE name = $1`,
		// WithReconfigure: this process's settings, and the counts recomputed (the count of
		// stored jobs is kept only while there is a capacity).
		reconfigure: `UPDATE {{schema}}.queues SET capacity = $2, overflow = $3, dedup_horizon_us = $4, dead_letter_limit = $5,
	lease_us = CASE WHEN $6::bigint > 0 THEN $6::bigint ELSE lease_us END,
	stored = (SELECT count(*) FROM {{schema}}.jobs WHERE queue = $1),
	dead = (SELECT count(*) FROM {{schema}}.dead WHERE queue = $1)
WHERE name = $1`,
		setLease: `UPDATE {{schema}}.queues SET lease_us = $2 WHERE name = $1 AND lease_us = 0`,
	}
	for _, p := range []*string{&s.insert, &s.insertDedup, &s.insertKeyed, &s.insertKeyedDedup, &s.insertBatch, &s.insertBatchDedup, &s.reserveBatch, &s.evictBatch,
		&s.reserve, &s.evict, &s.claim, &s.unclaim, &s.start, &s.startMany, &s.startOne, &s.extend, &s.leaseOf, &s.ack, &s.ackMany, &s.ackOne, &s.ackCounted, &s.ackTx, &s.ackTxCounted, &s.txStatus,
		&s.nack, &s.snooze, &s.release, &s.bury, &s.buryCount, &s.evictDead, &s.deadPage, &s.redriveTake,
		&s.redriveCount, &s.purge, &s.stats, &s.prune, &s.pruneUniques, &s.uniqueClaim, &s.uniqueMark, &s.rateRow,
		&s.takeStart, &s.agreeInsert, &s.agreeSelect, &s.reconfigure, &s.setLease, &s.canceledOf} {
		*p = render(*p, schema)
	}
	s.adm = newAdminStatements(schema)
	return s
}
