-- corral queue/postgres, migration 2: the dead letters, at most one per ID.

CREATE SEQUENCE {{schema}}.dead_seq;

CREATE TABLE {{schema}}.dead (
	queue       text NOT NULL,
	id          text NOT NULL,
	dseq        bigint NOT NULL DEFAULT nextval('{{schema}}.dead_seq'), -- burial order
	key         text,
	body        bytea NOT NULL,
	enqueued_at timestamptz NOT NULL,
	not_before  timestamptz,
	start_by    timestamptz,
	attempts    integer NOT NULL,
	reason      text NOT NULL,
	history     jsonb NOT NULL,
	at          timestamptz NOT NULL,
	PRIMARY KEY (queue, id)
);
CREATE INDEX dead_order ON {{schema}}.dead (queue, dseq);
