package brokertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/brokertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each server answers its client once started.
func TestServersAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(brokertest.StartNATS(t), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		t.Errorf("nats: %v", err)
	}
	nc.Close()
	pc, err := pgx.Connect(ctx, brokertest.StartPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := pc.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("postgres: SELECT 1 = %d, %v", one, err)
	}
	_ = pc.Close(ctx)
	rc := goredis.NewClient(&goredis.Options{Addr: brokertest.StartRedis(t)})
	if got, err := rc.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Errorf("redis: PING = %q, %v", got, err)
	}
	_ = rc.Close()
}
