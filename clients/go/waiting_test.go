package rlock

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// 1,000 goroutines wait on one lock through one client: no connection is blocked and each
// wait costs the server a few hundred bytes.
func TestThousandWaitersNeedNoBlockedConnections(t *testing.T) {
	const n = 1000
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("hot")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	before := infoField(t, c, "memory", "used_memory")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.NewMutex("hot")
			if err := m.LockContext(ctxFor(t, 60*time.Second)); err != nil {
				errs <- err
				return
			}
			m.Unlock()
		}()
	}
	eventually(t, "1,000 waiters", func() bool { return waiters(t, c, "hot") == n })
	blocked := infoField(t, c, "clients", "blocked_clients")
	clients := infoField(t, c, "clients", "connected_clients")
	perWaiter := (infoField(t, c, "memory", "used_memory") - before) / n
	t.Logf("%d waiters: blocked_clients %d, connected_clients %d, %d bytes of server memory each", n, blocked, clients, perWaiter)
	if blocked > 1 || clients > 5 || perWaiter >= 1024 {
		t.Fatalf("blocked_clients %d, connected_clients %d, %d B per waiter", blocked, clients, perWaiter)
	}
	start := time.Now()
	holder.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("1,000 handoffs in %v", time.Since(start))
}

func TestDeadlockIsReportedAtOnce(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	a1, b1 := c.NewMutex("a", WithValue("o1")), c.NewMutex("b", WithValue("o1"))
	a2, b2 := c.NewMutex("a", WithValue("o2")), c.NewMutex("b", WithValue("o2"))
	if err := a1.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := b2.Lock(); err != nil {
		t.Fatal(err)
	}
	go b1.LockContext(ctxFor(t, 10*time.Second)) // o1 waits for b, held by o2
	eventually(t, "o1 waiting", func() bool { return waiters(t, c, "b") == 1 })
	start := time.Now()
	err := a2.LockContext(ctxFor(t, 10*time.Second)) // o2 asks for a, held by o1: a cycle
	took := time.Since(start)
	var dl *DeadlockError
	if !errors.Is(err, ErrDeadlock) || !errors.As(err, &dl) || dl.Cycle == "" {
		t.Fatalf("got %v, want a DeadlockError", err)
	}
	t.Logf("deadlock reported in %v: %s", took, dl.Cycle)
	// At once: far below the 10 s wait, with room for a loaded machine (speed is the bench's).
	if took > time.Second {
		t.Fatalf("deadlock reported after %v, want at once", took)
	}
	if waiters(t, c, "a") != 0 {
		t.Fatal("the refused wait was queued")
	}
}
