package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrateTo applies the migrations up to version, for tests of an older schema.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, version int) error {
	return migrateTo(ctx, pool, schema, version)
}

// MigrationNames lists the embedded migrations' names, in order.
func MigrationNames() []string {
	var out []string
	for _, m := range migrations() {
		out = append(out, m.name)
	}
	return out
}

// Listening reports whether b's listener has a connection that LISTENs.
func Listening(b *Backend) bool { return b.listening.Load() }

// ClaimSQL returns the statement with which b's receivers look for jobs.
func ClaimSQL(b *Backend) string { return b.sql.claim }

// SettleSQL returns the statements with which b's Start and Ack settle one job alone.
func SettleSQL(b *Backend) (start, ack string) { return b.sql.start, b.sql.ack }

// OnClaimQueued makes b call f when a receiver's request waits for the claimer (a claim being
// under way). Call it before b is used.
func OnClaimQueued(b *Backend, f func()) { b.onQueued = f }

// OnClaimLeft makes b call f when a receiver whose ctx ended leaves its request in the
// claimer's query. Call it before b is used.
func OnClaimLeft(b *Backend, f func()) { b.onLeft = f }

// Name returns the name of b's queue.
func Name(b *Backend) string { return b.name }
