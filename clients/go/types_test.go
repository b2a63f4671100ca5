package rlock

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRWMutexReadersShareAWriterWaits(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	r1, r2, w := c.NewRWMutex("doc"), c.NewRWMutex("doc"), c.NewRWMutex("doc")
	if err := r1.RLock(); err != nil {
		t.Fatal(err)
	}
	if err := r2.TryRLock(); err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if err := r1.TryLock(); err == nil || errors.Is(err, ErrFailed) {
		t.Fatalf("a reader asking to write: %v, want the server's refusal", err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- w.LockContext(ctxFor(t, 10*time.Second)) }()
	eventually(t, "the writer waiting", func() bool {
		n, _ := field(admin(t, c, "RWLOCK.INFO", "doc"), "waiting_writers").(int64)
		return n == 1
	})
	r1.RUnlock()
	r2.RUnlock()
	if err := <-wrote; err != nil || w.Token() == 0 {
		t.Fatalf("writer: %v, token %d", err, w.Token())
	}
	if err := r1.TryRLock(); !errors.Is(err, ErrFailed) {
		t.Fatalf("a reader while a writer holds: %v", err)
	}
	if err := w.RLock(); err != nil { // a writer may read, and keeps reading after Unlock
		t.Fatal(err)
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
	if mode := field(admin(t, c, "RWLOCK.INFO", "doc"), "mode"); mode != "read" {
		t.Fatalf("mode after the downgrade: %v", mode)
	}
}

func TestSemaphorePermitsComeBackAndWaitersAreServedInOrder(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	a, b := c.NewSemaphore("gpus"), c.NewSemaphore("gpus")
	if ok, err := a.TrySetPermits(ctxFor(t, 5*time.Second), 3); !ok || err != nil {
		t.Fatalf("set permits: %v %v", ok, err)
	}
	ctx := ctxFor(t, 10*time.Second)
	if err := a.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if b.TryAcquire(2) {
		t.Fatal("2 permits granted with 1 available")
	}
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 2) }()
	eventually(t, "the waiter", func() bool {
		list, _ := field(admin(t, c, "RSEM.INFO", "gpus"), "waiters").([]interface{})
		return len(list) == 1
	})
	if c.NewSemaphore("gpus").TryAcquire(1) {
		t.Fatal("a newcomer took the permit a waiter waits for")
	}
	if err := a.Release(2); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Available(ctx); n != 1 {
		t.Fatalf("available %d, want 1", n)
	}
	if err := b.Release(3); err == nil {
		t.Fatal("releasing more than held succeeded")
	}
	if err := a.Release(1); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("releasing what was never held: %v", err)
	}
}

func TestCountDownLatchOpensForEveryWaiter(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	l := c.NewCountDownLatch("batch")
	ctx := ctxFor(t, 10*time.Second)
	if ok, err := l.TrySetCount(ctx, 2); !ok || err != nil {
		t.Fatalf("set: %v %v", ok, err)
	}
	opened := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { opened <- c.NewCountDownLatch("batch").Wait(ctx) }()
	}
	eventually(t, "three waiters", func() bool {
		return infoField(t, c, "rlock", "rlock_waiters") == 3
	})
	if n, err := l.CountDown(ctx); n != 1 || err != nil {
		t.Fatalf("count down: %d %v", n, err)
	}
	select {
	case err := <-opened:
		t.Fatalf("a waiter let in at count 1: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	l.CountDown(ctx)
	for i := 0; i < 3; i++ {
		if err := <-opened; err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := l.Count(ctx); n != 0 {
		t.Fatalf("count %d after opening", n)
	}
}

func TestMultiLockTakesEveryKeyOrNone(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := ctxFor(t, 10*time.Second)
	keys := []string{"{acct}:1", "{acct}:2"}
	other := c.NewMutex("{acct}:2")
	other.Lock()
	m := c.NewMultiLock(keys)
	if err := m.TryLock(ctx); !errors.Is(err, ErrFailed) {
		t.Fatalf("TryLock with one key held: %v", err)
	}
	if field(admin(t, c, "RLOCK.INFO", "{acct}:1"), "owner") != nil {
		t.Fatal("a key was taken by a request that failed")
	}
	got := make(chan error, 1)
	go func() { got <- m.Lock(ctx) }()
	eventually(t, "the request waiting", func() bool { return waiters(t, c, "{acct}:2") == 1 })
	other.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	tokens := m.Tokens()
	if tokens[0] == 0 || tokens[1] == 0 {
		t.Fatalf("tokens %v", tokens)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.TryLock(); err != nil {
		t.Fatalf("a key still held after Unlock: %v", err)
	}
}

// RESP2 waits by a second, subscribed connection named with NOTIFY <id>.
func TestRESP2WaitsOnASubscribedConnection(t *testing.T) {
	s := startServer(t)
	c := s.client(t, func(o *testOptions) { o.Protocol = 2 })
	holder := c.NewMutex("k")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	w := c.NewMutex("k")
	go func() { got <- w.LockContext(ctxFor(t, 10*time.Second)) }()
	eventually(t, "the waiter", func() bool { return waiters(t, c, "k") == 1 })
	if blocked := infoField(t, c, "clients", "blocked_clients"); blocked != 0 {
		t.Fatalf("blocked_clients %d", blocked)
	}
	holder.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// A dropped connection: the watchdog holding is re-bound on the new one, and a waiter
// waits again there.
func TestReconnectRebindsHoldingsAndRequeuesWaiters(t *testing.T) {
	s := startServer(t, "--rlock.watchdog-grace-ms", "2000")
	c := s.client(t)
	m := c.NewMutex("held")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	other := s.client(t)
	holder := other.NewMutex("wanted")
	holder.Lock()
	got := make(chan error, 1)
	w := c.NewMutex("wanted")
	go func() { got <- w.LockContext(ctxFor(t, 10*time.Second)) }()
	eventually(t, "the waiter", func() bool { return waiters(t, other, "wanted") == 1 })
	id := field(admin(t, other, "RLOCK.INFO", "held"), "watchdog")
	admin(t, other, "CLIENT", "KILL", "ID", strings.TrimSpace(toString(id)))
	eventually(t, "the re-binding", func() bool {
		now := field(admin(t, other, "RLOCK.INFO", "held"), "watchdog")
		return now != nil && now != id
	})
	eventually(t, "the waiter queued again", func() bool { return waiters(t, other, "wanted") == 1 })
	holder.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		t.Fatal("the re-bound holding was reported lost")
	default:
	}
}

func toString(v interface{}) string {
	switch v := v.(type) {
	case int64:
		return itoa(v)
	case string:
		return v
	}
	return ""
}
