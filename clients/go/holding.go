package rlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// holding is one granted holding the client knows of: re-bound after a reconnect when it is
// a watchdog holding, and told of its loss (a NOTIFY "lost" message, a failed re-bind).
type Holding struct {
	family     Family
	key, owner string
	token      int64
	lease      time.Duration
	watchdog   bool
	node       *node // where it is bound: re-bound when that node's session fails
	lostOnce   sync.Once
	lost       chan struct{}
	onLost     func(key string, token int64)
}

func newHolding(k Family, key, owner string, token int64, lease time.Duration, watchdog bool, onLost func(string, int64)) *Holding {
	return &Holding{family: k, key: key, owner: owner, token: token, lease: lease, watchdog: watchdog,
		lost: make(chan struct{}), onLost: onLost}
}

func (h *Holding) markLost() {
	h.lostOnce.Do(func() {
		close(h.lost)
		if h.onLost != nil {
			go h.onLost(h.key, h.token)
		}
	})
}

func (h *Holding) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// holdAt is where a holding is found by its lost-lock notices: its key and owner.
type holdAt struct{ key, owner string }

func (c *Client) register(h *Holding) {
	n := c.knownNode(h.key)
	c.mu.Lock()
	h.node = n
	defer c.mu.Unlock()
	at := holdAt{h.key, h.owner}
	if c.holdings[at] == nil {
		c.holdings[at] = map[*Holding]struct{}{}
	}
	c.holdings[at][h] = struct{}{}
}

func (c *Client) unregister(h *Holding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := holdAt{h.key, h.owner}
	delete(c.holdings[at], h)
	if len(c.holdings[at]) == 0 {
		delete(c.holdings, at)
	}
}

// rebind runs after node n's session failed: it moves every watchdog holding bound there to
// the primary that serves its key now (RENEW ... WATCHDOG: 1 = still held, 0 = lost), for as
// long as a lease could keep one alive.
func (c *Client) rebind(n *node) {
	c.mu.Lock()
	var bound []*Holding
	longest := time.Duration(0)
	for _, hs := range c.holdings {
		for h := range hs {
			if h.watchdog && h.node == n {
				bound = append(bound, h)
				if h.lease > longest {
					longest = h.lease
				}
			}
		}
	}
	c.mu.Unlock()
	if len(bound) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), longest)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, h := range bound {
		for !h.isLost() {
			held, err := c.renew(ctx, h.family, h.key, h.owner, h.lease, true)
			if err == nil || errors.Is(err, ErrNotConfirmed) {
				if !held {
					h.markLost()
				}
				now := c.knownNode(h.key)
				c.mu.Lock()
				h.node = now
				c.mu.Unlock()
				break
			}
			if ctx.Err() != nil {
				h.markLost()
				break
			}
			sleep(ctx, 50*time.Millisecond)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// renew sets an owner's lease again (and binds it to this connection, with watchdog), then
// waits for the replicas to have it; held is true when the owner still held it.
func (c *Client) renew(ctx context.Context, k Family, key, owner string, lease time.Duration, watchdog bool) (bool, error) {
	cmd := []string{k.family() + ".RENEW", key, owner, "PX", ms(lease)}
	if watchdog {
		cmd = append(cmd, "WATCHDOG")
	}
	reply, err := c.write(ctx, cmd, true)
	return reply.num == 1, err
}

// message is one NOTIFY message: "<event> <type> <value> <key-length> <key> <owner>".
type message struct {
	event, typ, value, key, owner string
}

func parseMessage(payload string) (message, bool) {
	parts := strings.SplitN(payload, " ", 5)
	if len(parts) != 5 {
		return message{}, false
	}
	n := 0
	for _, ch := range parts[3] {
		if ch < '0' || ch > '9' {
			return message{}, false
		}
		n = n*10 + int(ch-'0')
	}
	rest := parts[4]
	if len(rest) < n {
		return message{}, false
	}
	m := message{event: parts[0], typ: parts[1], value: parts[2], key: rest[:n]}
	if len(rest) > n+1 {
		m.owner = rest[n+1:]
	}
	return m, true
}

// onMessage routes the NOTIFY messages of every Dispatcher: outcomes of waits to their
// waiters, "lost" to holdings.
func (c *Client) onMessage(payload string) {
	m, ok := parseMessage(payload)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.event == "lost" {
		for h := range c.holdings[holdAt{m.key, m.owner}] {
			if h.family.messageType() == m.typ && (m.value == "" || m.value == itoa(h.token)) {
				h.markLost()
			}
		}
		return
	}
	at := waitAt{m.typ, m.key, m.owner}
	if ws := c.waiters[at]; len(ws) > 0 {
		select {
		case ws[0].events <- m: // buffered for every message one attempt can get
		default:
		}
		if len(ws) == 1 {
			delete(c.waiters, at)
		} else {
			c.waiters[at] = ws[1:]
		}
	}
}
