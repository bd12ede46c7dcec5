package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/retry"
)

// statusCode is a typed error an attempt can fail with, for errors.As.
type statusCode int

func (s statusCode) Error() string { return fmt.Sprintf("status %d", int(s)) }

var reasons = []error{retry.ErrMaxAttempts, retry.ErrMaxElapsed, retry.ErrBudgetExhausted, retry.ErrPermanent, retry.ErrCanceled}

// Regression (issue 14, item 14): an outcome's attempts may hold the outcomes of nested calls,
// and errors.Is used to walk into them and match their reasons, so an ErrMaxAttempts outcome
// also matched ErrPermanent or ErrBudgetExhausted. An outcome matches ErrExhausted and its own
// reason only; everything the attempts' errors hold, nested outcomes' attempts and causes
// included, stays reachable by errors.Is and errors.As.
func TestOutcomeMatchesItsOwnReasonOnly(t *testing.T) {
	innerCause := errors.New("inner context's cause")
	nested := map[string]func(ctx context.Context) error{
		// Each returns a nested outcome whose attempts failed with errA (or, for the
		// canceled one, whose context's cause is innerCause), with the reason named.
		"permanent": func(ctx context.Context) error {
			return retry.Do(ctx, nil, func(context.Context) error { return retry.Permanent(errA) })
		},
		"budget": func(ctx context.Context) error {
			return retry.Do(ctx, retry.New(retry.WithBudget(retry.NewBudget(0, 0)), noJitter(0)), func(context.Context) error { return errA })
		},
		"canceled": func(ctx context.Context) error {
			ctx, cancel := context.WithCancelCause(ctx)
			cancel(innerCause)
			return retry.Do(ctx, nil, func(context.Context) error { return errA })
		},
		"max elapsed": func(ctx context.Context) error {
			return retry.Do(ctx, retry.New(retry.WithMaxElapsed(ms), noJitter(time.Second)), func(context.Context) error { return errA })
		},
	}
	wraps := map[string]func(error) error{
		"direct":  func(err error) error { return err },
		"wrapped": func(err error) error { return fmt.Errorf("call: %w", err) },
		"joined":  func(err error) error { return errors.Join(statusCode(503), err) },
		"twice":   func(err error) error { return fmt.Errorf("outer: %w", errors.Join(fmt.Errorf("inner: %w", err))) },
	}
	for nname, inner := range nested {
		for wname, wrap := range wraps {
			t.Run(nname+"/"+wname, func(t *testing.T) {
				var innerOutcomes []error
				op := func(ctx context.Context) error {
					err := inner(ctx)
					innerOutcomes = append(innerOutcomes, err)
					return wrap(err)
				}
				err := retry.Do(context.Background(), retry.New(retry.WithMaxAttempts(2), noJitter(0)), op)
				e := asError(t, err)
				equal(t, retry.ErrMaxAttempts, e.Reason)
				innerReason := asError(t, innerOutcomes[0]).Reason
				check(t, innerReason != retry.ErrMaxAttempts, "the nested reason must differ: %v", innerReason)
				for _, outer := range []error{err, fmt.Errorf("x: %w", err), errors.Join(errD, err)} {
					check(t, errors.Is(outer, retry.ErrExhausted), "ErrExhausted")
					check(t, errors.Is(outer, retry.ErrMaxAttempts), "its own reason")
					for _, r := range reasons[1:] {
						check(t, !errors.Is(outer, r), "%v: matches the nested reason %v", outer, r)
					}
					// Everything the attempts hold stays reachable.
					check(t, errors.Is(outer, innerOutcomes[0]) && errors.Is(outer, innerOutcomes[1]), "nested outcomes themselves")
					if nname == "canceled" {
						check(t, errors.Is(outer, innerCause), "nested cause")
					} else {
						check(t, errors.Is(outer, errA), "nested attempt error")
					}
					var ne *retry.Error
					check(t, errors.As(outer, &ne) && ne == e, "errors.As finds the outcome itself first")
				}
				// The nested outcomes keep their own reasons.
				check(t, errors.Is(innerOutcomes[0], innerReason), "nested outcome lost its reason")
				// Errors lists the attempts' errors as they were returned.
				equal(t, 2, len(e.Errors()))
				equal(t, wrap(innerOutcomes[1]).Error(), e.Errors()[1].Error())
				check(t, errors.Is(e.Errors()[1], innerReason), "Errors holds the attempt's error as returned")
				// errors.As reaches typed errors beside and inside the nested outcomes.
				if wname == "joined" {
					var sc statusCode
					check(t, errors.As(err, &sc) && sc == 503, "typed attempt error")
				}
			})
		}
	}
}

// The other reasons do not leak either: an outer canceled call whose attempt returned a
// nested ErrMaxAttempts outcome matches ErrCanceled and not ErrMaxAttempts, and keeps the
// outer context's cause and the nested attempts' errors.
func TestCanceledOutcomeDoesNotMatchNestedReasons(t *testing.T) {
	cause := errors.New("shutdown")
	ctx, cancel := context.WithCancelCause(context.Background())
	err := retry.Do(ctx, retry.New(noJitter(0)), func(ctx context.Context) error {
		inner := retry.Do(ctx, retry.New(retry.WithMaxAttempts(2), noJitter(0)), func(context.Context) error { return statusCode(500) })
		cancel(cause)
		return inner
	})

	e := asError(t, err)
	equal(t, retry.ErrCanceled, e.Reason)
	check(t, errors.Is(err, retry.ErrCanceled) && errors.Is(err, cause), "own reason and cause")
	check(t, !errors.Is(err, retry.ErrMaxAttempts), "matches the nested ErrMaxAttempts")
	var sc statusCode
	check(t, errors.As(err, &sc) && sc == 500, "nested attempt's typed error")
	// Unwrap lists the attempt (shown with its own text) and then the cause.
	u := e.Unwrap()
	equal(t, 2, len(u))
	equal(t, e.Errors()[0].Error(), u[0].Error())
	equal(t, cause, u[1])
}

// listError is an error type that == cannot compare (it holds a slice).
type listError struct{ errs []error }

func (l listError) Error() string { return fmt.Sprint(l.errs) }

// The search through a nested outcome follows errors.Is: a target that == cannot compare is
// matched only by Is methods, never compared (which would panic).
func TestNestedSearchWithAnUncomparableTarget(t *testing.T) {
	err := retry.Do(context.Background(), retry.New(retry.WithMaxAttempts(1)), func(ctx context.Context) error {
		return retry.Do(ctx, retry.New(retry.WithMaxAttempts(1)), func(context.Context) error { return listError{[]error{errA}} })
	})

	check(t, !errors.Is(err, listError{[]error{errA}}), "an uncomparable target matched")
	var le listError
	check(t, errors.As(err, &le) && len(le.errs) == 1, "errors.As through the nested outcome")
}
