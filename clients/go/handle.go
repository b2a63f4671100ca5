package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// handle is one owner's view of one key, shared by the lock types: it takes and gives back
// holdings of any kind and keeps what the owner holds there.
type handle struct {
	c    *Client
	key  string
	set  settings
	mu   sync.Mutex
	held map[Family]*Holding
	// until is when a plain lease ends (zero under the watchdog).
	until time.Time
}

func (c *Client) newHandle(key string, opts []Option) *handle {
	return &handle{c: c, key: key, set: c.settings(opts), held: map[Family]*Holding{}}
}

func (hd *handle) spec(k Family, permits int) spec {
	return spec{family: k, keys: []string{hd.key}, owner: hd.set.owner, permits: permits,
		lease: hd.set.lease, watchdog: hd.set.watchdog, maxHold: hd.set.maxHold, lockDelay: hd.set.lockDelay}
}

// take acquires (waiting by NOTIFY when wait is set) and returns the token.
func (hd *handle) take(ctx context.Context, k Family, permits int, wait bool) (int64, error) {
	if hd.set.err != nil {
		return 0, hd.set.err
	}
	sp := hd.spec(k, permits)
	var t []int64
	var err error
	if wait && hd.set.wait < 0 { // WithTries(1): one try, as redsync's
		wait = false
	}
	if wait {
		t, err = hd.c.acquire(ctx, sp, hd.set.wait)
	} else {
		t, err = hd.c.tryAcquire(ctx, sp)
	}
	if err != nil {
		return 0, err
	}
	hd.granted(k, t[0])
	return t[0], nil
}

// granted records a grant: a new holding, or the current one under a new token (a
// semaphore's further permits, a read-write lock's downgrade).
func (hd *handle) granted(k Family, token int64) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	hd.setUntil()
	if h := hd.held[k]; h != nil && !h.isLost() {
		h.token = token
		return
	}
	if h := hd.held[k]; h != nil {
		hd.c.unregister(h)
	}
	h := newHolding(k, hd.key, hd.set.owner, token, hd.set.lease, hd.set.watchdog, hd.set.onLost)
	hd.held[k] = h
	hd.c.register(h)
}

// setUntil is when a plain lease ends as redsync counts it: the lease less its drift
// allowance (expiry × drift factor + 2 ms). Called with hd.mu held.
func (hd *handle) setUntil() {
	if !hd.set.watchdog {
		drift := time.Duration(float64(hd.set.lease)*hd.set.driftFactor) + 2*time.Millisecond
		hd.until = time.Now().Add(hd.set.lease - drift)
	}
}

// give releases one hold (or permits); at 0 the holding is over.
func (hd *handle) give(ctx context.Context, k Family, permits int) (int64, error) {
	if hd.set.err != nil {
		return 0, hd.set.err
	}
	left, err := hd.c.release(ctx, k, hd.key, hd.set.owner, permits)
	if err == nil && left == 0 {
		hd.forget(k, false)
	}
	if errors.Is(err, ErrNotHeld) {
		hd.forget(k, true)
	}
	return left, err
}

// forget drops the holding of kind k; lost: the server said it was no longer held, which is
// how the client learns of a loss no message told.
func (hd *handle) forget(k Family, lost bool) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if h := hd.held[k]; h != nil {
		if lost {
			h.markLost()
		}
		hd.c.unregister(h)
		delete(hd.held, k)
	}
}

func (hd *handle) holding(k Family) *Holding {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return hd.held[k]
}

func (hd *handle) token(k Family) int64 {
	if h := hd.holding(k); h != nil {
		return h.token
	}
	return 0
}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// lost is closed when the current holding of kind k is lost (at once when there is none).
func (hd *handle) lost(k Family) <-chan struct{} {
	if h := hd.holding(k); h != nil {
		return h.lost
	}
	return closedChan
}

// extend sets the lease again (redsync's Extend): false with ErrExtendFailed (which also
// matches ErrNotHeld) when no longer held; with WithSetNXOnExtend it then takes the lock again
// if it is free.
func (hd *handle) extend(ctx context.Context, k Family) (bool, error) {
	if hd.set.err != nil {
		return false, hd.set.err
	}
	held, err := hd.c.renew(ctx, k, hd.key, hd.set.owner, hd.set.lease, hd.set.watchdog)
	if err != nil && !errors.Is(err, ErrNotConfirmed) {
		return false, fromServer(err, []string{hd.key})
	}
	if !held {
		hd.forget(k, true)
		if hd.set.setNXOnExtend {
			if _, err := hd.take(ctx, k, 0, false); err == nil {
				return true, nil
			}
		}
		return false, fmt.Errorf("%w: %w", ErrExtendFailed, ErrNotHeld)
	}
	hd.mu.Lock()
	hd.setUntil()
	hd.mu.Unlock()
	return true, err
}

// valid asks the server whether this owner holds the key now (redsync's Valid).
func (hd *handle) valid(ctx context.Context) (bool, error) {
	if hd.set.err != nil {
		return false, hd.set.err
	}
	v, err := hd.c.do(ctx, "RLOCK.INFO", hd.key)
	if err != nil {
		return false, fromServer(err, []string{hd.key})
	}
	owner, _ := v.field("owner")
	return owner.str == hd.set.owner, nil
}

// guard runs one write through RLOCK.GUARD: only while this owner holds the lock with its
// token. Sent once, never retried: without an ID a retry could write twice.
func (hd *handle) guard(ctx context.Context, token int64, args []string) (interface{}, error) {
	cmd := append([]string{"RLOCK.GUARD", hd.key, hd.set.owner, itoa(token)}, args...)
	out, at, err := hd.c.send(ctx, request{key: hd.key, once: true,
		build: func(*node, *Session) ([][]string, error) { return [][]string{cmd}, nil }})
	if err == nil {
		err = out[0].err
	}
	if err != nil {
		err = fromServer(err, []string{hd.key})
		if errors.Is(err, ErrNotHeld) {
			if h := hd.holding(familyLock); h != nil {
				h.markLost()
			}
		}
		return nil, err
	}
	return out[0].reply.native(), hd.c.confirm(ctx, at)
}
