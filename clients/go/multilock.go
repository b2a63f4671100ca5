package rlock

import (
	"context"
	"errors"
)

// MultiLock takes several plain locks at once, every key or none (RLOCK.ACQUIREALL): one
// place in every key's queue, granted in one step, so requests that share keys never
// deadlock each other. In Cluster the keys must share a hash slot (a hash tag: {order}:1).
type MultiLock struct {
	c    *Client
	keys []string
	hds  []*handle
}

// NewMultiLock makes a lock on keys (the Mutex options apply).
func (c *Client) NewMultiLock(keys []string, opts ...Option) *MultiLock {
	set := c.settings(opts)
	m := &MultiLock{c: c, keys: keys}
	for _, key := range keys {
		m.hds = append(m.hds, &handle{c: c, key: key, set: set, held: map[Family]*Holding{}})
	}
	return m
}

func (m *MultiLock) spec() spec {
	sp := m.hds[0].spec(familyLock, 0)
	sp.keys = m.keys
	return sp
}

// Lock waits until every key is granted (or ctx ends).
func (m *MultiLock) Lock(ctx context.Context) error { return m.take(ctx, true) }

// TryLock takes every key if all are free now: ErrFailed otherwise, nothing taken.
func (m *MultiLock) TryLock(ctx context.Context) error { return m.take(ctx, false) }

func (m *MultiLock) take(ctx context.Context, wait bool) error {
	if err := m.check(); err != nil {
		return err
	}
	var t []int64
	var err error
	if wait && m.hds[0].set.wait < 0 { // WithTries(1)
		wait = false
	}
	if wait {
		t, err = m.c.acquire(ctx, m.spec(), m.hds[0].set.wait)
	} else {
		t, err = m.c.tryAcquire(ctx, m.spec())
	}
	if err != nil {
		return err
	}
	for i, hd := range m.hds {
		hd.granted(familyLock, t[i])
	}
	return nil
}

// Unlock releases one hold of every key (RLOCK.RELEASEALL); ErrNotHeld when a key was no
// longer held (the others are released).
func (m *MultiLock) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	cmd := append([]string{"RLOCK.RELEASEALL", itoa(int64(len(m.keys)))}, m.keys...)
	v, err := m.c.write(ctx, append(cmd, m.hds[0].set.owner, "ID", newID()), true)
	if err != nil {
		return fromServer(err, m.keys)
	}
	var missing error
	for i, hd := range m.hds {
		if i < len(v.elems) && v.elems[i].kind == valInt && v.elems[i].num > 0 {
			continue
		}
		gone := i >= len(v.elems) || v.elems[i].isNil()
		if gone {
			missing = ErrNotHeld
		}
		hd.forget(familyLock, gone)
	}
	return missing
}

// check refuses a MultiLock without keys, or with a bad option, before anything is sent.
func (m *MultiLock) check() error {
	if len(m.keys) == 0 {
		return errors.New("rlock: a MultiLock needs one key or more")
	}
	return m.hds[0].set.err
}

// Tokens are the fencing tokens, in the keys' order.
func (m *MultiLock) Tokens() []int64 {
	out := make([]int64, len(m.hds))
	for i, hd := range m.hds {
		out[i] = hd.token(familyLock)
	}
	return out
}
