package rlock

import (
	"context"
	"sync"
	"time"
)

// ErrLockAlreadyExpired is redsync's name for ErrNotHeld.
var ErrLockAlreadyExpired = ErrNotHeld

// Mutex is a reentrant, fair, fenced lock (RLOCK) in redsync's shape. One Mutex value is one
// owner: locking it again re-enters (and needs as many Unlocks); goroutines that must
// exclude each other use a Mutex each (or the same lock name with different values).
type Mutex struct{ hd *handle }

// NewMutex makes a Mutex on name. By default it is held with the server's watchdog (alive
// as long as the client's connection) and Lock waits until granted or its context ends.
func (c *Client) NewMutex(name string, opts ...Option) *Mutex {
	return &Mutex{hd: c.newHandle(name, opts)}
}

// Lock waits in the lock's FIFO queue (by NOTIFY: no connection blocked) until granted.
func (m *Mutex) Lock() error { return m.LockContext(context.Background()) }

// LockContext is Lock until ctx ends; ErrFailed when the wait set by WithWait ran out.
func (m *Mutex) LockContext(ctx context.Context) error {
	_, err := m.hd.take(ctx, familyLock, 0, true)
	return err
}

// TryLock takes the lock only if it is free now (or already this owner's): ErrFailed if not.
func (m *Mutex) TryLock() error { return m.TryLockContext(context.Background()) }

// TryLockContext is TryLock with a context.
func (m *Mutex) TryLockContext(ctx context.Context) error {
	_, err := m.hd.take(ctx, familyLock, 0, false)
	return err
}

// Unlock releases one hold: true when it was this owner's; (false, ErrNotHeld) when it no
// longer was (its lease ended, it was force-released).
func (m *Mutex) Unlock() (bool, error) { return m.UnlockContext(context.Background()) }

// UnlockContext is Unlock with a context.
func (m *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	_, err := m.hd.give(ctx, familyLock, 0)
	return err == nil, err
}

// Extend sets the lease again (WithExpiry locks; a watchdog lock needs no Extend).
func (m *Mutex) Extend() (bool, error) { return m.ExtendContext(context.Background()) }

// ExtendContext is Extend with a context.
func (m *Mutex) ExtendContext(ctx context.Context) (bool, error) { return m.hd.extend(ctx, familyLock) }

// Valid asks the server whether this Mutex holds the lock now (redsync's deprecated Valid:
// prefer Lost, which is told).
func (m *Mutex) Valid() (bool, error) { return m.ValidContext(context.Background()) }

// ValidContext is Valid with a context.
func (m *Mutex) ValidContext(ctx context.Context) (bool, error) { return m.hd.valid(ctx) }

// Until is when the plain lease ends (WithExpiry), less redsync's drift allowance; the zero
// time under the watchdog.
func (m *Mutex) Until() time.Time {
	m.hd.mu.Lock()
	defer m.hd.mu.Unlock()
	return m.hd.until
}

// Value is the owner id. Name is the lock's key.
func (m *Mutex) Value() string { return m.hd.set.owner }
func (m *Mutex) Name() string  { return m.hd.key }

// Token is the fencing token of the current holding (0 when not held): pass it to the
// resource you protect and have it refuse lower ones.
func (m *Mutex) Token() int64 { return m.hd.token(familyLock) }

// Lost is closed when the client learns that the current holding ended other than by
// Unlock (closed at once when nothing is held).
func (m *Mutex) Lost() <-chan struct{} { return m.hd.lost(familyLock) }

// Guard runs one write command only while this Mutex holds the lock with its token
// (RLOCK.GUARD): its reply, or ErrNotHeld with nothing run.
func (m *Mutex) Guard(ctx context.Context, args ...string) (interface{}, error) {
	return m.hd.guard(ctx, m.Token(), args)
}

// Locker is the Mutex as a sync.Locker: Lock waits without a limit and both panic on an
// error (as sync.Mutex panics on unlocking an unlocked mutex).
func (m *Mutex) Locker() sync.Locker { return locker{m} }

type locker struct{ m *Mutex }

func (l locker) Lock() {
	if err := l.m.Lock(); err != nil {
		panic(err)
	}
}

func (l locker) Unlock() {
	if _, err := l.m.Unlock(); err != nil {
		panic(err)
	}
}
