package main

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkUncontendedPair is one goroutine's acquire+release on a key of its own, for each
// side, against the redis-server with the module that the bench starts: per pair the client's
// CPU time, the goroutines it started, the commands sent and the server's time in them; with
// -benchmem the allocations, with -cpuprofile (one side: -bench UncontendedPair/rlock) where
// the client's time goes.
//
//	go test -run '^$' -bench UncontendedPair -benchmem
func BenchmarkUncontendedPair(b *testing.B) {
	addr, stop := startServer(moduleFile())
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	sides, closeSides := newSides(rdb)
	defer closeSides()
	ctx := context.Background()
	for _, s := range sides {
		b.Run(s.name, func(b *testing.B) {
			l := s.make(fmt.Sprintf("bench:%s:pair", s.name))
			must(l.Lock(ctx)) // the connections set up before the clock
			must(l.Unlock(ctx))
			b.ReportAllocs()
			must(rdb.ConfigResetStat(ctx).Err())
			cpu, created := processCPU(), goroutinesCreated()
			for b.Loop() {
				must(l.Lock(ctx))
				must(l.Unlock(ctx))
			}
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(goroutinesCreated()-created)/float64(b.N), "goroutines/op")
			// The server's time in the commands the pair sent (a Lua script's or the module's
			// own calls inside them are in their time, and listed apart by INFO).
			stats, err := rdb.Info(ctx, "commandstats").Result()
			must(err)
			calls, usec := commandTotals(stats, s.name)
			b.ReportMetric(float64(calls)/float64(b.N), "commands/op")
			b.ReportMetric(float64(usec)/float64(b.N), "server-µs/op")
		})
	}
}

// goroutinesCreated is how many goroutines the process has started so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// commandTotals adds up the calls and µs of the commands each side sends for a pair, from
// INFO commandstats: RLOCK.ACQUIRE and RLOCK.RELEASE; redsync's SET and EVALSHA (EVAL the
// first time).
func commandTotals(info, side string) (calls, usec int64) {
	sent := map[string][]string{"rlock": {"rlock.acquire", "rlock.release"}, "redsync": {"set", "evalsha", "eval"}}[side]
	for _, line := range strings.Split(info, "\r\n") {
		for _, name := range sent {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":"); ok {
				var c, u int64
				fmt.Sscanf(rest, "calls=%d,usec=%d,", &c, &u)
				calls, usec = calls+c, usec+u
			}
		}
	}
	return calls, usec
}
