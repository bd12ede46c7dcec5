package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// redisCounters is what a redis-server says it did: the scripts run (EVAL, EVALSHA), the
// commands (those the scripts called included), and the CPU seconds it used.
type redisCounters struct {
	scripts, cmds int64
	cpu           float64
}

// readRedisCounters reads INFO commandstats and cpu from the server at addr.
func readRedisCounters(b *testing.B, addr string) redisCounters {
	b.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var rc redisCounters
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if name, rest, ok := strings.Cut(line, ":"); ok {
			switch {
			case strings.HasPrefix(name, "cmdstat_"):
				calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
				n, _ := strconv.ParseInt(calls, 10, 64)
				if cmd := strings.TrimPrefix(name, "cmdstat_"); cmd == "info" {
					continue
				} else if cmd == "eval" || cmd == "evalsha" {
					rc.scripts += n
				}
				rc.cmds += n
			case name == "used_cpu_sys" || name == "used_cpu_user":
				f, _ := strconv.ParseFloat(rest, 64)
				rc.cpu += f
			}
		}
	}
	return rc
}

// reportRedisCounters reports, per job of b, the scripts and commands the server ran and the
// CPU time it used since before.
func reportRedisCounters(b *testing.B, addr string, before redisCounters) {
	b.Helper()
	after := readRedisCounters(b, addr)
	n := float64(b.N)
	b.ReportMetric(float64(after.scripts-before.scripts)/n, "scripts/job")
	b.ReportMetric(float64(after.cmds-before.cmds)/n, "cmds/job")
	b.ReportMetric((after.cpu-before.cpu)*1e6/n, "srv-µs/job")
}
