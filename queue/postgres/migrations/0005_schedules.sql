-- corral queue/postgres, migration 5: jobs in time. The snoozes of each job (queue.Snooze: a
-- handler put it back without spending an attempt), which the consumer bounds
-- (queue.WithMaxSnoozes). Jobs stored before it have none.

ALTER TABLE {{schema}}.jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
