module github.com/corral-go/corral/queue/redis

go 1.25.0

require github.com/corral-go/corral v0.1.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)
