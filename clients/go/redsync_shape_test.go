package rlock

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// What redsync v4's own mutex_test.go checks, in our terms (its suite runs against this
// package only locally, through a shim; README "Peer suite" says which of its cases differ).
func TestRedsyncShape(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := ctxFor(t, 30*time.Second)

	t.Run("TestMutex: mutexes on names of their own all lock and unlock at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				m := c.NewMutex("rs-mutex-"+itoa(int64(i)), WithExpiry(8*time.Second))
				if err := m.Lock(); err != nil {
					t.Error(err)
					return
				}
				if ok, err := m.Valid(); !ok || err != nil {
					t.Errorf("not held after Lock: %v %v", ok, err)
				}
				if ok, err := m.Unlock(); !ok || err != nil {
					t.Errorf("Unlock: %v %v", ok, err)
				}
			}(i)
		}
		wg.Wait()
	})

	t.Run("TestMutexAlreadyLocked: TryLock of a held lock is *ErrTaken", func(t *testing.T) {
		first := c.NewMutex("rs-taken")
		if err := first.Lock(); err != nil {
			t.Fatal(err)
		}
		defer first.Unlock()
		err := c.NewMutex("rs-taken").TryLock()
		var taken *ErrTaken
		if !errors.As(err, &taken) || !errors.Is(err, ErrFailed) || len(taken.Nodes) != 1 {
			t.Fatalf("got %v, want *ErrTaken matching ErrFailed", err)
		}
		start := time.Now()
		if err := c.NewMutex("rs-taken", WithTries(1)).Lock(); !errors.As(err, &taken) {
			t.Fatalf("WithTries(1): got %v", err)
		}
		if waited := time.Since(start); waited > 5*time.Second {
			t.Fatalf("WithTries(1) waited %v", waited)
		}
	})

	t.Run("TestMutexExtend: Extend pushes the expiry out", func(t *testing.T) {
		m := c.NewMutex("rs-extend", WithExpiry(8*time.Second))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock()
		before := m.Until()
		pttl := func() int64 { v, _ := c.Do(ctx, "PTTL", "rs-extend"); n, _ := v.(int64); return n }
		was := pttl()
		eventually(t, "time to pass", func() bool { return pttl() < was-50 })
		if ok, err := m.Extend(); !ok || err != nil {
			t.Fatalf("Extend: %v %v", ok, err)
		}
		if now := pttl(); now <= was-50 || !m.Until().After(before) {
			t.Fatalf("PTTL %d after Extend (was %d), Until %v (was %v)", now, was, m.Until(), before)
		}
	})

	expired := func(t *testing.T, key string, opts ...Option) *Mutex {
		m := c.NewMutex(key, append([]Option{WithExpiry(200 * time.Millisecond)}, opts...)...)
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the lease to end", func() bool { v, _ := c.Do(ctx, "EXISTS", key); return v == int64(0) })
		return m
	}

	t.Run("TestMutexExtendExpired: Extend of an expired lock fails", func(t *testing.T) {
		ok, err := expired(t, "rs-extend-expired").Extend()
		if ok || !errors.Is(err, ErrExtendFailed) || !errors.Is(err, ErrLockAlreadyExpired) {
			t.Fatalf("got %v %v, want false, ErrExtendFailed", ok, err)
		}
	})

	t.Run("TestSetNXOnExtendAcquiresLockWhenKeyIsExpired", func(t *testing.T) {
		m := expired(t, "rs-setnx", WithSetNXOnExtend())
		if ok, err := m.Extend(); !ok || err != nil {
			t.Fatalf("got %v %v, want the lock taken again", ok, err)
		}
		if ok, err := m.Valid(); !ok || err != nil {
			t.Fatalf("not held: %v %v", ok, err)
		}
		m.Unlock()
	})

	t.Run("TestSetNXOnExtendFailsToAcquireLockWhenKeyIsTaken", func(t *testing.T) {
		m := expired(t, "rs-setnx-taken", WithSetNXOnExtend())
		other := c.NewMutex("rs-setnx-taken")
		if err := other.Lock(); err != nil {
			t.Fatal(err)
		}
		defer other.Unlock()
		if ok, err := m.Extend(); ok || err == nil {
			t.Fatalf("got %v %v, want false and an error", ok, err)
		}
	})

	t.Run("TestMutexUnlockExpired: Unlock of an expired lock is false, ErrLockAlreadyExpired", func(t *testing.T) {
		ok, err := expired(t, "rs-unlock-expired").Unlock()
		if ok || !errors.Is(err, ErrLockAlreadyExpired) {
			t.Fatalf("got %v %v", ok, err)
		}
	})

	t.Run("TestValid: a held lock is valid, and a second Mutex cannot take it", func(t *testing.T) {
		m := c.NewMutex("rs-valid", WithExpiry(time.Hour))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock()
		if ok, err := m.Valid(); !ok || err != nil {
			t.Fatalf("Valid: %v %v", ok, err)
		}
		if err := c.NewMutex("rs-valid", WithTries(2), WithRetryDelay(10*time.Millisecond)).Lock(); err == nil {
			t.Fatal("a second Mutex took a held lock")
		}
		if ok, _ := c.NewMutex("rs-valid").Valid(); ok {
			t.Fatal("another Mutex is valid")
		}
	})

	t.Run("TestMutexLockUnlockSplit: another Mutex with the same value unlocks it", func(t *testing.T) {
		m := c.NewMutex("rs-split", WithExpiry(time.Hour))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.NewMutex("rs-split", WithExpiry(time.Hour), WithValue(m.Value())).Unlock(); !ok || err != nil {
			t.Fatalf("got %v %v", ok, err)
		}
		if v, _ := c.Do(ctx, "EXISTS", "rs-split"); v != int64(0) {
			t.Fatal("still locked")
		}
	})

	t.Run("WithGenValueFunc makes the value", func(t *testing.T) {
		m := c.NewMutex("rs-gen", WithGenValueFunc(func() (string, error) { return "made-by-me", nil }))
		if m.Value() != "made-by-me" {
			t.Fatalf("value %q", m.Value())
		}
	})
}
