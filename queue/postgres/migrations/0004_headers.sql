-- corral queue/postgres, migration 4: the headers of each job (queue.Message.Headers), a JSON
-- object of strings, kept by its dead letter. NULL is none: jobs and dead letters stored before
-- it have no headers.

ALTER TABLE {{schema}}.jobs ADD COLUMN headers jsonb;
ALTER TABLE {{schema}}.dead ADD COLUMN headers jsonb;
