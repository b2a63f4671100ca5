package rlock

import (
	"context"
	"errors"
	"time"
)

// CountDownLatch (RLATCH) lets waiters in together once it has been counted down to 0.
type CountDownLatch struct {
	c   *Client
	key string
}

// NewCountDownLatch makes a latch on name; TrySetCount sets it.
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{c: c, key: name}
}

// TrySetCount sets the count (at least 1) if the latch is not set: true when it was set (with a
// request id: a call resent after a lost reply that set it is true again).
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	v, err := l.c.write(ctx, []string{"RLATCH.SET", l.key, itoa(n), "ID", newID()}, true)
	return v.num == 1, err
}

// CountDown counts one down (with a request id: a retried call counts once); the count left.
func (l *CountDownLatch) CountDown(ctx context.Context) (int64, error) {
	v, err := l.c.write(ctx, []string{"RLATCH.COUNTDOWN", l.key, "ID", newID()}, true)
	return v.num, err
}

// Count is the count left (0 when open or never set).
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	v, err := l.c.do(ctx, "RLATCH.COUNT", l.key)
	return v.num, err
}

// Wait returns once the latch is open (nil) or ctx ends (ctx.Err()), waiting by NOTIFY. The
// server's wait has no deadline of its own: an abandoned one stays queued (a few hundred
// bytes) until the latch opens or the client closes, because RLOCK.CANCEL of a latch would
// cancel this connection's other waits on it too.
func (l *CountDownLatch) Wait(ctx context.Context) error {
	w := l.c.addWaiter(familyLatch, []string{l.key}, "")
	defer l.c.removeWaiter(w)
	for {
		out, at, err := l.c.send(ctx, l.c.waitRequest(w, l.key, func(notify []string) []string {
			return append([]string{"RLATCH.AWAIT", l.key, "WAIT", "0"}, notify...)
		}))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrConnection) {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		if err == nil {
			err = out[0].err
		}
		if err != nil {
			return fromServer(err, []string{l.key})
		}
		if out[0].reply.kind == valInt {
			return nil
		}
		_, err = w.outcome(ctx, l.c, at.s)
		if !errors.Is(err, errRequeue) {
			return err
		}
	}
}
