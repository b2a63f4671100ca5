package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkUncontendedPair is one goroutine's acquire+release on a key of its own, for each
// side, against the redis-server with the module that the bench starts: with -benchmem the
// allocations per pair, with -cpuprofile (one side: -bench UncontendedPair/rlock) where the
// client's time goes.
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
			cpu := processCPU()
			for b.Loop() {
				must(l.Lock(ctx))
				must(l.Unlock(ctx))
			}
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
