package rlock

import "context"

// RWMutex is a read-write lock (RWLOCK) in sync.RWMutex's shape: readers share, a writer
// holds alone; readers arriving while a writer waits queue behind it. One RWMutex value is
// one owner: it re-enters, a writer may also read (and keeps reading after Unlock), a reader
// asking to write gets an error at once (the upgrade could only wait for itself).
type RWMutex struct{ hd *handle }

// NewRWMutex makes a read-write lock on name (the Mutex options apply).
func (c *Client) NewRWMutex(name string, opts ...Option) *RWMutex {
	return &RWMutex{hd: c.newHandle(name, opts)}
}

func (rw *RWMutex) RLock() error { return rw.RLockContext(context.Background()) }
func (rw *RWMutex) RLockContext(ctx context.Context) error {
	_, err := rw.hd.take(ctx, familyRead, 0, true)
	return err
}
func (rw *RWMutex) TryRLock() error {
	_, err := rw.hd.take(context.Background(), familyRead, 0, false)
	return err
}
func (rw *RWMutex) RUnlock() error { return rw.RUnlockContext(context.Background()) }
func (rw *RWMutex) RUnlockContext(ctx context.Context) error {
	_, err := rw.hd.give(ctx, familyRead, 0)
	return err
}

func (rw *RWMutex) Lock() error { return rw.LockContext(context.Background()) }
func (rw *RWMutex) LockContext(ctx context.Context) error {
	_, err := rw.hd.take(ctx, familyWrite, 0, true)
	return err
}
func (rw *RWMutex) TryLock() error {
	_, err := rw.hd.take(context.Background(), familyWrite, 0, false)
	return err
}
func (rw *RWMutex) Unlock() error { return rw.UnlockContext(context.Background()) }
func (rw *RWMutex) UnlockContext(ctx context.Context) error {
	_, err := rw.hd.give(ctx, familyWrite, 0)
	return err
}

// Token is the writer's fencing token (0 when this owner does not write); RToken the
// read holding's.
func (rw *RWMutex) Token() int64  { return rw.hd.token(familyWrite) }
func (rw *RWMutex) RToken() int64 { return rw.hd.token(familyRead) }

// Lost is closed when the write holding is lost; RLost for the read holding.
func (rw *RWMutex) Lost() <-chan struct{}  { return rw.hd.lost(familyWrite) }
func (rw *RWMutex) RLost() <-chan struct{} { return rw.hd.lost(familyRead) }
