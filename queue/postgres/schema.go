package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is code: migrations/NNNN_name.sql, applied in order by Migrate, each recorded in
// the table migrations of the schema. Open checks that the last one was applied.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one file of migrations/.
type migration struct {
	version int
	name    string // the file name without .sql, as errors name it: "0002_dead_letters"
	sql     string // with {{schema}} for the schema's quoted name
}

// migrations returns the embedded migrations in order. Their names are checked by a test.
func migrations() []migration {
	ents, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic("postgres: embedded migrations: " + err.Error())
	}
	var ms []migration
	for _, e := range ents { // ReadDir sorts by name
		name := strings.TrimSuffix(e.Name(), ".sql")
		v, err := strconv.Atoi(name[:4])
		if err != nil {
			panic("postgres: embedded migration " + e.Name() + " has no version")
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic("postgres: embedded migration: " + err.Error())
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	return ms
}

// latest is the version of the last migration, which Open requires.
func latest() migration {
	ms := migrations()
	return ms[len(ms)-1]
}

// DefaultSchema is the schema of the queue tables when no WithSchema is given.
const DefaultSchema = "corral"

var validSchema = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// quoteIdent returns name as a quoted SQL identifier.
func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// render returns sql with the schema's quoted name for {{schema}}.
func render(sql, schema string) string {
	return strings.ReplaceAll(sql, "{{schema}}", quoteIdent(schema))
}

// preamble makes the schema and its table of applied migrations.
const preamble = `CREATE SCHEMA IF NOT EXISTS {{schema}};
CREATE TABLE IF NOT EXISTS {{schema}}.migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
);
`

// record marks a migration applied (%d and %s: its version and name).
const record = "INSERT INTO {{schema}}.migrations (version, name) VALUES (%d, '%s') ON CONFLICT (version) DO NOTHING;\n"

// MigrationSQL returns the SQL that Migrate runs on an empty database, for teams that apply
// migrations with a tool of their own: the schema (WithSchema, DefaultSchema without it), then
// every migration in order, each followed by the row that records it in the schema's table
// migrations, which Open reads. Run it in one transaction. Of opts, only WithSchema concerns
// it.
func MigrationSQL(opts ...Option) string {
	o := newOptions(opts)
	var b strings.Builder
	b.WriteString(render(preamble, o.schema))
	for _, m := range migrations() {
		fmt.Fprintf(&b, "\n-- %s\n", m.name)
		b.WriteString(render(m.sql, o.schema))
		b.WriteString(render(fmt.Sprintf(record, m.version, m.name), o.schema))
	}
	return b.String()
}

// Migrate brings the schema of the queue tables (WithSchema, DefaultSchema without it) up to
// date: it creates the schema if there is none, and applies the migrations not applied yet, in
// order, in one transaction, recording each. Processes that call it at once are serialised by
// an advisory lock: one applies, the others find it done. It is never called implicitly: a
// Backend opened on a schema that lacks a migration fails, naming it. Of opts, only WithSchema
// concerns it.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	if pool == nil {
		panic("postgres: Migrate with a nil pool")
	}
	return migrateTo(ctx, pool, newOptions(opts).schema, latest().version)
}

// migrateTo applies the migrations up to version (tests stop before the last).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, version int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "corral migrations "+schema); err != nil {
			return fmt.Errorf("postgres: migrate schema %s: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, render(preamble, schema)); err != nil {
			return fmt.Errorf("postgres: migrate schema %s: %w", schema, err)
		}
		have, err := appliedVersion(ctx, tx, schema)
		if err != nil {
			return err
		}
		for _, m := range migrations() {
			if m.version <= have || m.version > version {
				continue
			}
			sql := render(m.sql, schema) + render(fmt.Sprintf(record, m.version, m.name), schema)
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("postgres: migration %s on schema %s: %w", m.name, schema, err)
			}
		}
		return nil
	})
}

// appliedVersion returns the version of the last migration applied to schema, 0 if none (or
// no table of migrations).
func appliedVersion(ctx context.Context, q querier, schema string) (int, error) {
	var v int
	err := q.QueryRow(ctx, render("SELECT coalesce(max(version), 0) FROM {{schema}}.migrations", schema)).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table, schema
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return v, nil
}

// SchemaError is the error of Open on a schema that lacks a migration, or has one that this
// package does not know (applied by a newer version of it).
type SchemaError struct {
	// Schema is the schema of the queue tables.
	Schema string
	// Applied is the version of the last migration applied, 0 if none.
	Applied int
	// Want is the version of the last migration this package knows.
	Want int
	// Missing names the first migration to apply ("0002_dead_letters"), "" if Applied is
	// beyond Want.
	Missing string
}

func (e *SchemaError) Error() string {
	if e.Missing == "" {
		return fmt.Sprintf("postgres: schema %s is at migration %d, newer than this package's %d: "+
			"use the version of queue/postgres that applied it", e.Schema, e.Applied, e.Want)
	}
	return fmt.Sprintf("postgres: schema %s is at migration %d of %d: migration %s is not applied; "+
		"run postgres.Migrate (or apply postgres.MigrationSQL with your migration tool)", e.Schema, e.Applied, e.Want, e.Missing)
}

// checkSchema returns a *SchemaError unless schema is at the latest migration.
func checkSchema(ctx context.Context, q querier, schema string) error {
	have, err := appliedVersion(ctx, q, schema)
	if err != nil {
		return err
	}
	want := latest().version
	if have == want {
		return nil
	}
	e := &SchemaError{Schema: schema, Applied: have, Want: want}
	for _, m := range migrations() {
		if m.version > have {
			e.Missing = m.name
			break
		}
	}
	return e
}
