package rlock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMutexReentersAndFences(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	m := c.NewMutex("order:1")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	first := m.Token()
	if err := m.Lock(); err != nil || m.Token() != first || first == 0 {
		t.Fatalf("re-entry: err %v, token %d then %d", err, first, m.Token())
	}
	if holds := field(admin(t, c, "RLOCK.INFO", "order:1"), "holds"); holds != int64(2) {
		t.Fatalf("holds = %v, want 2", holds)
	}
	other := c.NewMutex("order:1")
	if err := other.TryLock(); !errors.Is(err, ErrFailed) {
		t.Fatalf("another owner's TryLock: %v, want ErrFailed", err)
	}
	for i := 0; i < 2; i++ {
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("unlock %d: %v %v", i, ok, err)
		}
	}
	if ok, err := m.Unlock(); ok || !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of a free lock: %v %v", ok, err)
	}
	if err := other.TryLock(); err != nil || other.Token() <= first {
		t.Fatalf("next holder: %v, token %d after %d", err, other.Token(), first)
	}
}

func TestMutexWaiterIsHandedTheLockInOrder(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("jobs")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := 0; i < 3; i++ {
		eventually(t, "the waiters before", func() bool { return waiters(t, c, "jobs") == int64(i) })
		go func(i int) {
			m := c.NewMutex("jobs")
			if err := m.LockContext(ctxFor(t, 10*time.Second)); err != nil {
				t.Error(err)
			}
			order <- i
			m.Unlock()
		}(i)
	}
	eventually(t, "three waiters", func() bool { return waiters(t, c, "jobs") == 3 })
	if blocked := infoField(t, c, "clients", "blocked_clients"); blocked != 0 {
		t.Fatalf("blocked_clients = %d: waits must not block connections", blocked)
	}
	holder.Unlock()
	for want := 0; want < 3; want++ {
		if got := <-order; got != want {
			t.Fatalf("granted %d, want %d (FIFO)", got, want)
		}
	}
}

func TestMutexContextEndLeavesTheQueue(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("k")
	holder.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.NewMutex("k").LockContext(ctx) }()
	eventually(t, "the waiter", func() bool { return waiters(t, c, "k") == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := waiters(t, c, "k"); n != 0 {
		t.Fatalf("%d waiters left after the cancel", n)
	}
	timed := c.NewMutex("k", WithWait(50*time.Millisecond))
	start := time.Now()
	if err := timed.Lock(); !errors.Is(err, ErrFailed) || time.Since(start) > 2*time.Second {
		t.Fatalf("WithWait: %v after %v", err, time.Since(start))
	}
}

func TestMutexExpiryExtendUntilAndLoss(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	lost := make(chan int64, 1)
	m := c.NewMutex("lease", WithExpiry(5*time.Second), WithOnLost(func(_ string, token int64) { lost <- token }))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if until := time.Until(m.Until()); until < 4*time.Second || until > 5*time.Second {
		t.Fatalf("Until in %v, want about 5 s", until)
	}
	if ok, err := m.Extend(); !ok || err != nil {
		t.Fatalf("extend: %v %v", ok, err)
	}
	if ttl := field(admin(t, c, "RLOCK.INFO", "lease"), "watchdog"); ttl != nil {
		t.Fatalf("a WithExpiry lock is bound to the watchdog connection %v", ttl)
	}
	admin(t, c, "RLOCK.FORCERELEASE", "lease")
	if ok, err := m.Extend(); ok || !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend after a force release: %v %v", ok, err)
	}
	if token := <-lost; token == 0 {
		t.Fatal("the force-released holding's loss was not reported")
	}

	// A grant by message is told of its loss by message.
	holder := c.NewMutex("told")
	holder.Lock()
	waiter := c.NewMutex("told", WithOnLost(func(_ string, token int64) { lost <- token }))
	got := make(chan error)
	go func() { got <- waiter.LockContext(ctxFor(t, 10*time.Second)) }()
	eventually(t, "the waiter", func() bool { return waiters(t, c, "told") == 1 })
	holder.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	admin(t, c, "RLOCK.FORCERELEASE", "told")
	select {
	case <-waiter.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("no lost notice")
	}
	if token := <-lost; token != waiter.Token() {
		t.Fatalf("lost callback for token %d, want %d", token, waiter.Token())
	}
}

func TestMutexGuardAndLocker(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	m := c.NewMutex("acct")
	l := m.Locker()
	l.Lock()
	if v, err := m.Guard(ctxFor(t, 5*time.Second), "SET", "balance", "10"); err != nil || v != "OK" {
		t.Fatalf("guarded SET: %v %v", v, err)
	}
	l.Unlock()
	if _, err := m.Guard(ctxFor(t, 5*time.Second), "SET", "balance", "20"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("guarded write after unlock: %v", err)
	}
	if v := admin(t, c, "GET", "balance"); v != "10" {
		t.Fatalf("balance %v: the refused write ran", v)
	}
}
