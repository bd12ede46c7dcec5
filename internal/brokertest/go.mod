module github.com/corral-go/corral/internal/brokertest

go 1.26.0

require (
	github.com/corral-go/corral v0.2.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/nats-io/nats.go v1.53.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)
