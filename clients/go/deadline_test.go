package rlock

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// A wait whose context ends returns exactly ctx.Err(), never before the context ended, never
// ErrFailed, and leaves nothing queued on the server: 1,000 waits at once with deadlines from
// 30 to 525 ms (the measurement: 0 to 29 of 100 came back ErrFailed, one 7 ms early).
func TestThousandWaitsWithRandomDeadlinesEachReturnCtxErrAndLeaveNothingQueued(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("busy")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	type outcome struct {
		err               error
		deadline, return_ time.Time
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := time.Duration(30+rand.Intn(496)) * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			deadline, _ := ctx.Deadline()
			err := c.NewMutex("busy").LockContext(ctx)
			out[i] = outcome{err: err, deadline: deadline, return_: time.Now()}
		}(i)
	}
	wg.Wait()
	for i, o := range out {
		if !errors.Is(o.err, context.DeadlineExceeded) || errors.Is(o.err, ErrFailed) {
			t.Fatalf("wait %d returned %v, want context.DeadlineExceeded", i, o.err)
		}
		if o.return_.Before(o.deadline) {
			t.Fatalf("wait %d returned %v before its deadline", i, o.deadline.Sub(o.return_))
		}
	}
	if q := waiters(t, c, "busy"); q != 0 {
		t.Fatalf("%d waits left queued on the server", q)
	}
	if info := admin(t, c, "RLOCK.INFO", "busy"); field(info, "owner") != holder.Value() {
		t.Fatalf("the holder lost the lock: %v", info)
	}
}

// A cancelled context: context.Canceled, and the wait left the queue before the call returned.
func TestCancelledWaitReturnsCanceledAndLeavesTheQueue(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("busy")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := c.NewRWMutex("busy-rw").Lock(); err != nil {
		t.Fatal(err)
	}
	sem := c.NewSemaphore("busy-sem")
	if _, err := sem.TrySetPermits(ctxFor(t, 5*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	if err := sem.Acquire(ctxFor(t, 5*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []func(ctx context.Context) error{
		func(ctx context.Context) error { return c.NewMutex("busy").LockContext(ctx) },
		func(ctx context.Context) error { return c.NewRWMutex("busy-rw").LockContext(ctx) },
		func(ctx context.Context) error { return c.NewSemaphore("busy-sem").Acquire(ctx, 1) },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() { got <- lock(ctx) }()
		time.Sleep(0) // the wait may or may not have reached the server: both must hold
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if q := infoField(t, c, "rlock", "rlock_waiters"); q != 0 {
			t.Fatalf("%d waits left queued", q)
		}
	}
}

// ErrFailed is only for the wait the caller asked for (WithWait) running out: a context with
// a later deadline does not change that, and one that ends first wins.
func TestWithWaitRunsOutAsErrFailedAndAnEarlierContextAsCtxErr(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	holder := c.NewMutex("busy")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := c.NewMutex("busy", WithWait(100*time.Millisecond)).LockContext(ctxFor(t, 10*time.Second))
	var taken *ErrTaken
	if !errors.Is(err, ErrFailed) || !errors.As(err, &taken) || len(taken.Nodes) != 1 {
		t.Fatalf("got %v, want ErrFailed (*ErrTaken)", err)
	}
	// The server ends the wait on its own clock, in whole milliseconds (Redis's blocking
	// timeouts), so it may end up to a millisecond before this process's 100 ms: a make test
	// run saw 99.977 ms. Giving up early for real would be far below.
	if elapsed := time.Since(start); elapsed < 98*time.Millisecond {
		t.Fatalf("gave up after %v, before the 100 ms asked", elapsed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.NewMutex("busy", WithWait(10*time.Second)).LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if q := waiters(t, c, "busy"); q != 0 {
		t.Fatalf("%d waits left queued", q)
	}
}
