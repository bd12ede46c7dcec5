package pgserver

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server answers on its DSN with fsync off, and is gone, with its directory, once the test
// that started it ended.
func TestStart(t *testing.T) {
	var s *Server
	t.Run("running", func(t *testing.T) {
		s = Start(t)
		ctx := context.Background()
		c, err := pgx.Connect(ctx, s.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var fsync string
		if err := c.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
			t.Fatal(err)
		}
		if fsync != "off" {
			t.Fatalf("fsync = %q, want off", fsync)
		}
	})
	if s.p.Running() {
		t.Fatal("the server still runs after its test ended")
	}
	if _, err := os.Stat(s.p.Dir); !os.IsNotExist(err) {
		t.Fatalf("its directory %s: %v, want it removed", s.p.Dir, err)
	}
}
