-- corral queue/postgres, migration 1: the queues, their jobs, and the IDs within the dedup
-- horizon. {{schema}} stands for the schema's quoted name.

-- One row per queue: the settings its processes share (agreed at Open), and the counts
-- that capacity and the dead-letter limit are checked against.
CREATE TABLE {{schema}}.queues (
	name              text PRIMARY KEY,
	capacity          integer NOT NULL,
	overflow          text NOT NULL,
	dedup_horizon_us  bigint NOT NULL,
	dead_letter_limit integer NOT NULL,
	lease_us          bigint NOT NULL DEFAULT 0, -- 0 until a consumer set it
	stored            bigint NOT NULL DEFAULT 0, -- jobs stored; kept only while capacity > 0
	dead              bigint NOT NULL DEFAULT 0  -- dead letters
);

-- One row per stored job: ready, delayed (ready_at in the future) or leased (lease_until set).
CREATE TABLE {{schema}}.jobs (
	seq         bigserial PRIMARY KEY,          -- enqueue order
	queue       text NOT NULL,
	id          text NOT NULL,
	key         text,                           -- the ordering key, NULL for none
	body        bytea NOT NULL,
	enqueued_at timestamptz NOT NULL,
	not_before  timestamptz,
	start_by    timestamptz,
	ready_at    timestamptz NOT NULL,           -- when it may be delivered (NotBefore, retry delay)
	lease       bigint NOT NULL DEFAULT 0,      -- the number of the current or last lease
	lease_until timestamptz,                    -- the end of the current lease, NULL if none
	lease_start timestamptz,
	started     bigint NOT NULL DEFAULT 0,      -- the lease on which a handler last started
	attempts    integer NOT NULL DEFAULT 0,     -- handler runs
	deliveries  integer NOT NULL DEFAULT 0,
	history     jsonb NOT NULL DEFAULT '[]',    -- the failed attempts
	UNIQUE (queue, id)
);
-- Receive: the waiting jobs in enqueue order; the next due time; expired leases.
CREATE INDEX jobs_waiting ON {{schema}}.jobs (queue, seq) WHERE lease_until IS NULL;
CREATE INDEX jobs_due ON {{schema}}.jobs (queue, ready_at) WHERE lease_until IS NULL;
CREATE INDEX jobs_leased ON {{schema}}.jobs (queue, lease_until) WHERE lease_until IS NOT NULL;
-- Ordering keys: the job of a key enqueued first.
CREATE INDEX jobs_key ON {{schema}}.jobs (queue, key, seq) WHERE key IS NOT NULL;

-- The IDs enqueued within the dedup horizon of a queue that has one.
CREATE TABLE {{schema}}.ids (
	queue text NOT NULL,
	id    text NOT NULL,
	at    timestamptz NOT NULL,
	PRIMARY KEY (queue, id)
);
CREATE INDEX ids_at ON {{schema}}.ids (queue, at);
