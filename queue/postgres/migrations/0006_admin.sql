-- corral queue/postgres, migration 6: the operator's verbs (driver.Admin). A job an operator
-- cancelled while it ran is marked until its handler's consumer settles it (or its lease ends);
-- a paused queue's receivers claim nothing.

ALTER TABLE {{schema}}.jobs ADD COLUMN canceled boolean NOT NULL DEFAULT false;
ALTER TABLE {{schema}}.queues ADD COLUMN paused boolean NOT NULL DEFAULT false;
