package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// errRequeue: the wait must be sent again (the connection failed, or the server turned
// replica): on the new primary it joins the queue anew, its place in line is lost.
var errRequeue = errors.New("rlock: wait again")

// waiter is one wait by NOTIFY: the messages for its keys and owner come to events.
type waiter struct {
	family Family
	keys   []string
	owner  string
	events chan message
	got    []int64
	have   int
}

// waitAt is where a wait's messages are routed: their type, key and owner (a struct, not a
// joined string: no allocation per wait).
type waitAt struct{ typ, key, owner string }

func waiterAt(k Family, key, owner string) waitAt { return waitAt{k.messageType(), key, owner} }

func (c *Client) addWaiter(k Family, keys []string, owner string) *waiter {
	// Registered by its request's build (waitRequest), just before the wait is sent.
	return &waiter{family: k, keys: keys, owner: owner, events: make(chan message, 2*len(keys)+2)}
}

// requeue registers the waiter at the end of its keys' lists, as its new request will be.
func (c *Client) requeue(w *waiter) {
	c.removeWaiter(w)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range w.keys {
		at := waiterAt(w.family, key, w.owner)
		c.waiters[at] = append(c.waiters[at], w)
	}
	if w.got == nil {
		w.got = make([]int64, len(w.keys))
	}
	clear(w.got)
	w.have = 0
}

func (c *Client) removeWaiter(w *waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range w.keys {
		at := waiterAt(w.family, key, w.owner)
		ws := c.waiters[at]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(c.waiters, at)
		} else {
			c.waiters[at] = ws
		}
	}
}

// waitRequest is the request of a wait: it registers the waiter again (at the end of its
// keys' lists, as the new entry will be) just before the wait goes to the node's session.
func (c *Client) waitRequest(w *waiter, key string, cmd func(notify []string) []string) request {
	return request{key: key, build: func(_ *node, s *Session) ([][]string, error) {
		w.drain()
		c.requeue(w)
		return [][]string{cmd(s.disp.notify)}, nil
	}}
}

func (w *waiter) drain() {
	for {
		select {
		case <-w.events:
		default:
			return
		}
	}
}

// take records one message: the tokens once every key is granted, errRequeue or the
// failure otherwise, (nil, nil) while more are due.
func (w *waiter) take(m message) ([]int64, error) {
	switch m.event {
	case "granted":
		for i, key := range w.keys {
			if key == m.key && w.got[i] == 0 {
				w.got[i], _ = strconv.ParseInt(m.value, 10, 64)
				w.have++
				break
			}
		}
		if w.have == len(w.keys) {
			return w.got, nil
		}
		return nil, nil
	case "timeout":
		return nil, notGranted()
	case "failed":
		switch m.value {
		case "READONLY", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN":
			return nil, errRequeue
		}
		if m.value == "WRONGTYPE" {
			return nil, ErrWrongType
		}
		return nil, fmt.Errorf("rlock: the wait failed: %s", m.value)
	}
	return nil, nil
}

// outcome waits for the wait's messages: the tokens, ErrFailed at the server's timeout,
// errRequeue when the connection failed or the key is served elsewhere now, or ctx's end.
func (w *waiter) outcome(ctx context.Context, c *Client, s *Session) ([]int64, error) {
	lost := s.lost()
	for {
		select {
		case m := <-w.events:
			t, err := w.take(m)
			if m.value == "READONLY" {
				s.fail() // the server turned replica: its session is of no use
			}
			if errors.Is(err, errRequeue) && c.router.isCluster() {
				c.router.changed(ctx)
			}
			if t != nil || err != nil {
				return t, err
			}
		case <-lost:
			return nil, errRequeue
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// granted reads what came before a cancel's reply: the tokens if the grant raced it.
func (w *waiter) granted() []int64 {
	for {
		select {
		case m := <-w.events:
			if t, _ := w.take(m); t != nil {
				return t
			}
		default:
			return nil
		}
	}
}
