package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue"
)

// At most one refresh of a user's feed per ten minutes: a second request
// while the first is pending (or within ten minutes after it ended) gets
// the first job's ID back, and ErrNotUnique.
func ExampleWithUnique() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	refresh := func(user string) (string, error) {
		return q.Enqueue(ctx, user, queue.WithUnique("refresh:"+user, 10*time.Minute))
	}
	first, _ := refresh("ada")
	again, err := refresh("ada")
	fmt.Println(again == first, errors.Is(err, queue.ErrNotUnique))
	_, err = refresh("grace")
	fmt.Println(err)
	// Output:
	// true true
	// <nil>
}
