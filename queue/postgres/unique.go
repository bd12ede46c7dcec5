package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/corral-go/corral/queue/driver"
)

// enqueueUnique is one try of an enqueue of a job with a unique key (driver.Message.Unique),
// in a span of its own (a transaction, or a savepoint in the caller's transaction tx): the
// key is claimed in the table uniques, then the job is stored as any other, and marked with
// its key, which a trigger holds for the job's period once the job leaves the jobs table. A
// key that another job holds refuses the job with ErrNotUnique and the holder's ID; one held
// by a job of the same ID is the ID's duplicate. It reports again as the enqueue it makes
// does, and when the holder of the key committed while the claim ran.
func (b *Backend) enqueueUnique(ctx context.Context, tx Tx, m driver.Message) (res driver.EnqueueResult, again bool, err error) {
	cctx, s, end, err := b.beginTry(ctx, tx)
	if err != nil {
		return res, false, err
	}
	defer end()
	var (
		holder  string
		claimed bool
	)
	err = s.QueryRow(cctx, b.sql.uniqueClaim, b.name, m.Unique, m.ID).Scan(&holder, &claimed)
	if errors.Is(err, sql.ErrNoRows) { // pgx.ErrNoRows matches it too
		err = nil
	}
	switch {
	case err != nil:
		return res, false, calls.Fail(cctx, "enqueue", err)
	case holder == "":
		return res, true, nil
	case !claimed && holder == m.ID:
		return res, false, driver.ErrDuplicate
	case !claimed:
		return driver.EnqueueResult{Existing: holder}, false, driver.ErrNotUnique
	}
	if b.cfg.Capacity == 0 {
		res, again, err = b.enqueueOnce(cctx, s, m)
	} else {
		res, again, err = b.enqueueCounted(cctx, s, m)
	}
	if err != nil || again {
		return res, again, err
	}
	if _, err := s.Exec(cctx, b.sql.uniqueMark, b.name, m.ID, m.Unique, micros(m.UniqueFor)); err != nil {
		return driver.EnqueueResult{}, false, calls.Fail(cctx, "enqueue", err)
	}
	if err := s.commit(cctx); err != nil {
		return driver.EnqueueResult{}, false, calls.Fail(cctx, "enqueue", err)
	}
	return res, false, nil
}
