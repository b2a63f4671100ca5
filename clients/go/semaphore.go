package rlock

import (
	"context"
	"fmt"
)

// Semaphore is a weighted semaphore (RSEM) in golang.org/x/sync/semaphore's shape, over the
// server's owned, leased permits: a holder's permits come back when its lease ends or its
// connection closes. One Semaphore value is one owner; its permits add up.
type Semaphore struct{ hd *handle }

// NewSemaphore makes a semaphore on name; TrySetPermits sets its size once.
func (c *Client) NewSemaphore(name string, opts ...Option) *Semaphore {
	return &Semaphore{hd: c.newHandle(name, opts)}
}

// TrySetPermits sets the available permits if the semaphore does not exist yet. It carries a
// request ID, so its resend after a lost reply answers as the first call did (true again).
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	v, err := s.hd.c.write(ctx, []string{"RSEM.SETPERMITS", s.hd.key, itoa(n), "ID", newID()}, true)
	return v.num == 1, err
}

// AddPermits adds n available permits (negative: removes); the new count. It carries a
// request ID, so its resend after a lost reply adds once.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) (int64, error) {
	v, err := s.hd.c.write(ctx, []string{"RSEM.ADDPERMITS", s.hd.key, itoa(n), "ID", newID()}, true)
	return v.num, err
}

// Available is the number of permits nobody holds.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	v, err := s.hd.c.do(ctx, "RSEM.INFO", s.hd.key)
	if err != nil || v.isNil() {
		return 0, err
	}
	a, _ := v.field("available")
	n, _ := a.integer()
	return n, nil
}

// Acquire waits for n permits, in FIFO order (a large request is not passed by small ones),
// until granted or ctx ends (then ctx.Err(), with nothing taken).
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if err := permitCount("Acquire", n); err != nil {
		return err
	}
	_, err := s.hd.take(ctx, familyPermits, int(n), true)
	return err
}

// TryAcquire takes n permits only if they are available now and nobody waits.
func (s *Semaphore) TryAcquire(n int64) bool {
	return s.TryAcquireContext(context.Background(), n) == nil
}

// TryAcquireContext is TryAcquire that says why nothing was taken: ErrFailed when the permits
// are not available now, or the error (ErrWrongType, *NotConfirmedError, ErrConnection ...).
func (s *Semaphore) TryAcquireContext(ctx context.Context, n int64) error {
	if err := permitCount("TryAcquire", n); err != nil {
		return err
	}
	_, err := s.hd.take(ctx, familyPermits, int(n), false)
	return err
}

// Release gives back n permits. x/sync panics when releasing more than held; this returns
// an error (ErrNotHeld when the owner holds none).
func (s *Semaphore) Release(n int64) error {
	return s.ReleaseContext(context.Background(), n)
}

// ReleaseContext is Release with a context.
func (s *Semaphore) ReleaseContext(ctx context.Context, n int64) error {
	if err := permitCount("Release", n); err != nil {
		return err
	}
	_, err := s.hd.give(ctx, familyPermits, int(n))
	return err
}

// Token is the fencing token of the latest grant; Lost is closed when the permits are lost.
func (s *Semaphore) Token() int64          { return s.hd.token(familyPermits) }
func (s *Semaphore) Lost() <-chan struct{} { return s.hd.lost(familyPermits) }

// permitCount refuses a number of permits below 1 before anything is sent.
func permitCount(call string, n int64) error {
	if n < 1 {
		return fmt.Errorf("rlock: Semaphore.%s needs 1 permit or more, got %d", call, n)
	}
	return nil
}
