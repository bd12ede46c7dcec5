-- corral queue/postgres, migration 3: the payload version of each job (queue.Message.Version),
-- kept by its dead letter. Jobs and dead letters stored before it are of version 0, as a
-- queue that declares no version enqueues.

ALTER TABLE {{schema}}.jobs ADD COLUMN version bigint NOT NULL DEFAULT 0;
ALTER TABLE {{schema}}.dead ADD COLUMN version bigint NOT NULL DEFAULT 0;
