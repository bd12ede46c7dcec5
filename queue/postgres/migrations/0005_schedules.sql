-- corral queue/postgres, migration 5: jobs in time. The snoozes of each job (queue.Snooze: a
-- handler put it back without spending an attempt), which the consumer bounds
-- (queue.WithMaxSnoozes). Jobs stored before it have none.

ALTER TABLE {{schema}}.jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0;

-- Unique keys (queue.WithUnique): the key of each job that has one, and its period; and the
-- keys held, by a stored job (until NULL) or, once it left, until its period ends.
ALTER TABLE {{schema}}.jobs ADD COLUMN unique_key text, ADD COLUMN unique_for_us bigint NOT NULL DEFAULT 0;
CREATE TABLE {{schema}}.uniques (
	queue text NOT NULL,
	key   text NOT NULL,
	id    text NOT NULL,           -- the job that holds the key
	until timestamptz,             -- NULL while the job is stored; then the end of its period
	PRIMARY KEY (queue, key)
);
CREATE INDEX uniques_until ON {{schema}}.uniques (queue, until) WHERE until IS NOT NULL;

-- However a job leaves (ack, dead letter, eviction), its key stays held for its period.
CREATE FUNCTION {{schema}}.corral_unique_left() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE {{schema}}.uniques SET until = now() + OLD.unique_for_us * interval '1 microsecond'
	WHERE queue = OLD.queue AND key = OLD.unique_key AND id = OLD.id AND until IS NULL;
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_unique_left AFTER DELETE ON {{schema}}.jobs
	FOR EACH ROW WHEN (OLD.unique_key IS NOT NULL) EXECUTE FUNCTION {{schema}}.corral_unique_left();

-- Rate limits (queue.WithRateLimit): the starts taken within the window of each queue, by the
-- server's clock. One row per queue, locked by the statement that takes a start.
CREATE TABLE {{schema}}.rates (
	queue  text PRIMARY KEY,
	starts timestamptz[] NOT NULL DEFAULT '{}'
);
