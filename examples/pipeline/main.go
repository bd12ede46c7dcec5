// Command pipeline runs a three-stage pipeline (read, transform, write) with
// bounded stages and backpressure, and stops it mid-stream.
//
// Every stage is a task of one scope. The stages are joined by unbuffered
// channels, so a slow stage slows the ones before it instead of letting a
// buffer grow; the transform stage runs at most 4 calls at once and keeps
// the order of its input. After 100 results the operator cancels the context:
// every stage stops, with a cause that says why, and Run returns only after
// every goroutine of every stage has returned.
//
//	go run ./examples/pipeline
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/corral-go/corral/scope"
)

const (
	transformLimit = 4   // the transform stage's concurrency bound
	stopAfter      = 100 // results written before the operator stops the run
)

var errOperatorStop = errors.New("operator stopped the pipeline")

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

type record struct {
	seq    int
	digest [sha256.Size]byte
}

func run(ctx context.Context, out io.Writer) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)

	var readCause, writeCause error
	written := 0
	err := scope.Run(ctx, func(s *scope.Scope) error {
		lines := make(chan int) // unbuffered: read waits for transform (backpressure)

		// Stage 1: read an endless source.
		s.GoNamed("read", func(ctx context.Context) error {
			defer close(lines)
			for seq := 1; ; seq++ {
				select {
				case lines <- seq:
				case <-ctx.Done():
					readCause = context.Cause(ctx)
					return ctx.Err()
				}
			}
		})

		// Stages 2 and 3: transform with at most transformLimit calls at a
		// time, in input order, and write each result as it comes.
		s.GoNamed("transform+write", func(ctx context.Context) error {
			for r, err := range scope.MapSeq(ctx, fromChan(lines), transform, scope.WithLimit(transformLimit)) {
				if err != nil {
					if ctx.Err() == nil {
						return err // a transform failed: fail the pipeline
					}
					break // the scope's cancellation, reported below
				}
				if r.seq != written+1 {
					return fmt.Errorf("record %d written after %d: order lost", r.seq, written)
				}
				written++
				if written == stopAfter {
					fmt.Fprintf(out, "wrote %d records in order (last digest %x...)\n", written, r.digest[:4])
					stop(errOperatorStop)
				}
			}
			// The sequence ends early with the stop, or when read closed
			// lines because of it.
			writeCause = context.Cause(ctx)
			return ctx.Err()
		})
		return nil
	})

	fmt.Fprintf(out, "read stopped because: %v\n", readCause)
	fmt.Fprintf(out, "transform+write stopped because: %v\n", writeCause)
	fmt.Fprintf(out, "Run returned after every stage returned: %v\n", err)
	if !errors.Is(err, errOperatorStop) {
		return fmt.Errorf("pipeline ended with %v, want the operator's stop", err)
	}
	return nil
}

// transform is the CPU-bound step of the pipeline.
func transform(ctx context.Context, seq int) (record, error) {
	return record{seq: seq, digest: sha256.Sum256(fmt.Appendf(nil, "record-%d", seq))}, nil
}

// fromChan adapts a channel to an iter.Seq that ends when the channel is
// closed or the consumer stops.
func fromChan[T any](c <-chan T) iter.Seq[T] {
	return func(yield func(T) bool) {
		for v := range c {
			if !yield(v) {
				return
			}
		}
	}
}
