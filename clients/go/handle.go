package rlock

import (
	"context"
	"errors"
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
	sp := hd.spec(k, permits)
	var t []int64
	var err error
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
	if !hd.set.watchdog {
		hd.until = time.Now().Add(hd.set.lease)
	}
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

// give releases one hold (or permits); at 0 the holding is over.
func (hd *handle) give(ctx context.Context, k Family, permits int) (int64, error) {
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

// extend sets the lease again (redsync's Extend): false when no longer held.
func (hd *handle) extend(ctx context.Context, k Family) (bool, error) {
	held, err := hd.c.renew(ctx, k, hd.key, hd.set.owner, hd.set.lease, hd.set.watchdog)
	if err != nil && !errors.Is(err, ErrNotConfirmed) {
		return false, fromServer(err, []string{hd.key})
	}
	if !held {
		hd.forget(k, true)
		return false, ErrNotHeld
	}
	hd.mu.Lock()
	if !hd.set.watchdog {
		hd.until = time.Now().Add(hd.set.lease)
	}
	hd.mu.Unlock()
	return true, err
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
