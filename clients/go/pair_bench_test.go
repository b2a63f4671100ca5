package rlock

import (
	"context"
	"testing"
)

// BenchmarkUncontendedPair is one Mutex's acquire+release against a real redis-server with
// the module (-benchmem: allocations per pair; -cpuprofile: where the client's time goes).
func BenchmarkUncontendedPair(b *testing.B) {
	s := startServer(b)
	c := s.client(b)
	ctx := context.Background()
	m := c.NewMutex("pair")
	if err := m.LockContext(ctx); err != nil { // the session: its two connections
		b.Fatal(err)
	}
	m.UnlockContext(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := m.LockContext(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := m.UnlockContext(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
