package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Session is rlock's pair of connections to one primary, both taken out of the user's go-redis
// client and never given back to its pool (a pool would hand a watchdog holder's connection to
// other traffic, and its idle or lifetime reaper would close it and end the holding silently):
//   - conn, an EphemeralConn of the node's client (its hooks and tracing see every command),
//     carries every call: acquires (an immediate WATCHDOG grant is bound to it), waits,
//     releases, renewals and their confirmation by the replicas;
//   - the Dispatcher's subscriber, which the waits name (NOTIFY <id>): a grant by message is
//     bound to it.
//
// Both are PINGed every third of rlock.watchdog-idle-ms while they live. When either fails,
// the session is over: the holdings bound to it are re-bound on a new one, or reported lost.
type Session struct {
	conn    *redis.Conn
	mu      sync.Mutex   // guards queue and sending: one round trip at a time on conn
	queue   []*batchCall // callers waiting for the next round trip
	sending bool
	// closeAfter: the session failed during a round trip, which closes conn when it ends.
	closeAfter bool
	disp       *Dispatcher
	pingEvery  time.Duration
	failed     chan struct{}
	once       sync.Once
}

func (s *Session) fail() {
	s.once.Do(func() {
		close(s.failed)
		s.disp.close()
		// go-redis's Conn may not be closed while a command runs on it: the round trip under
		// way closes it when it ends.
		s.mu.Lock()
		if s.sending {
			s.closeAfter = true
		} else {
			s.conn.Close()
		}
		s.mu.Unlock()
	})
}

// lost is closed when the session failed (either connection).
func (s *Session) lost() <-chan struct{} { return s.failed }

func (s *Session) isFailed() bool {
	select {
	case <-s.failed:
		return true
	default:
		return false
	}
}

// pipeline sends the commands in one round trip on the session's connection. A server error
// stays with its command; a failure of the connection ends the session (ErrConnection).
// Callers that arrive while a round trip is under way are sent together in the next one (one
// go-redis pipeline), so goroutines on different keys do not wait for each other's replies.
func (s *Session) pipeline(ctx context.Context, cmds ...[]string) ([]result, error) {
	// The caller's context ending must not tear the connection mid-reply (with go-redis's
	// ContextTimeoutEnabled it would): the holdings bound to it would end. Its values (trace
	// spans) still reach the user's hooks.
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	call := &batchCall{ctx: ctx, cmds: cmds}
	s.mu.Lock()
	s.queue = append(s.queue, call)
	if s.sending {
		// Only a caller that waits for another's round trip needs to be woken (uncontended,
		// a call makes no channel).
		call.wake = make(chan bool, 1)
		s.mu.Unlock()
		if finished := <-call.wake; finished {
			return call.out, call.err
		}
		s.mu.Lock() // promoted: this caller sends the next round trip
	}
	s.sending = true
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	s.send(batch) // this caller's own commands are in it
	s.mu.Lock()
	if len(s.queue) > 0 {
		// The first caller that queued meanwhile sends the next round trip: no caller waits
		// for more than one round trip besides its own.
		s.queue[0].wake <- false
	} else {
		s.sending = false
		clear(batch)
		s.queue = batch[:0] // the next call's queue, without a new slice
		if s.closeAfter {
			s.closeAfter = false
			s.conn.Close()
		}
	}
	s.mu.Unlock()
	return call.out, call.err
}

// batchCall is one caller's commands in a round trip shared with others. wake tells a waiting
// caller that its results are in (true) or that it sends the next round trip (false); the
// caller that sends a round trip itself has none.
type batchCall struct {
	ctx  context.Context
	cmds [][]string
	rcs  []*redis.Cmd
	out  []result
	err  error
	wake chan bool
}

func (b *batchCall) finish() {
	if b.wake != nil {
		b.wake <- true
	}
}

// send makes one round trip of the batch's commands and hands each caller its results.
func (s *Session) send(batch []*batchCall) {
	if s.isFailed() {
		for _, b := range batch {
			b.err = fmt.Errorf("%w: the session ended", ErrConnection)
			b.finish()
		}
		return
	}
	if len(batch) == 1 && len(batch[0].cmds) == 1 {
		b := batch[0]
		b.rcs = []*redis.Cmd{s.conn.Do(b.ctx, cmdArgs(b.cmds[0])...)}
	} else {
		s.conn.Pipelined(batch[0].ctx, func(p redis.Pipeliner) error {
			for _, b := range batch {
				b.rcs = make([]*redis.Cmd, len(b.cmds))
				for i, c := range b.cmds {
					b.rcs[i] = p.Do(b.ctx, cmdArgs(c)...)
				}
			}
			return nil
		})
	}
	for _, b := range batch {
		b.out = make([]result, len(b.rcs))
		for i, rc := range b.rcs {
			b.out[i] = commandResult(rc)
			if errors.Is(b.out[i].err, ErrConnection) {
				go s.fail()
				b.out, b.err = nil, b.out[i].err
				break
			}
		}
		b.finish()
	}
}

func (s *Session) do(ctx context.Context, args ...string) (value, error) {
	out, err := s.pipeline(ctx, args)
	if err != nil {
		return value{}, err
	}
	return out[0].reply, out[0].err
}

func cmdArgs(cmd []string) []interface{} {
	out := make([]interface{}, len(cmd))
	for i, a := range cmd {
		out[i] = a
	}
	return out
}

// node is one primary the client talks to ("" : the one server of a *redis.Client; in a
// Cluster, a primary by address). Each has one session, dialled once whoever asks, and the
// count of its replicas.
type node struct {
	addr     string
	client   *redis.Client
	sess     *Session
	dialing  chan struct{}
	replicas replicaCache
}

// nodeAt is the node at addr, served by the go-redis client nc.
func (c *Client) nodeAt(addr string, nc *redis.Client) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[addr]
	if n == nil {
		n = &node{addr: addr, client: nc}
		c.nodes[addr] = n
	}
	return n
}

// nodeFor is the node that serves key now.
func (c *Client) nodeFor(ctx context.Context, key string) (*node, error) {
	addr, nc, err := c.router.nodeFor(ctx, key)
	if err != nil {
		return nil, err
	}
	return c.nodeAt(addr, nc), nil
}

// knownNode is the node key is served by as far as go-redis knows now: where a holding
// granted now is bound.
func (c *Client) knownNode(key string) *node {
	n, err := c.nodeFor(context.Background(), key)
	if err != nil {
		return nil
	}
	return n
}

// session returns the node's current session, connecting (once, whoever asks) when there is
// none.
func (c *Client) session(ctx context.Context, n *node) (*Session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errClientClosed
		}
		if s := n.sess; s != nil && !s.isFailed() {
			c.mu.Unlock()
			return s, nil
		}
		if n.dialing != nil {
			wait := n.dialing
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		n.dialing = make(chan struct{})
		c.mu.Unlock()
		s, err := c.connect(context.WithoutCancel(ctx), n)
		c.mu.Lock()
		close(n.dialing)
		n.dialing = nil
		if err == nil && c.closed {
			s.fail()
			err = errClientClosed
		}
		if err == nil {
			n.sess = s
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		go c.keepAlive(n, s)
		return s, nil
	}
}

// connect takes a connection of rlock's own from the node's client and starts its Dispatcher.
func (c *Client) connect(ctx context.Context, n *node) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s := &Session{conn: n.client.EphemeralConn(), pingEvery: 10 * time.Second, failed: make(chan struct{})}
	fail := func(err error) (*Session, error) {
		s.conn.Close()
		if s.disp != nil {
			s.disp.close()
		}
		return nil, err
	}
	// A failover client's sentinels can name the old primary for a moment: refuse a replica.
	if n.client.Options().Addr == failoverAddr {
		role, err := s.conn.Do(ctx, "ROLE").Slice()
		if err != nil {
			return fail(fmt.Errorf("%w: %v", ErrConnection, err))
		}
		if len(role) == 0 || role[0] != "master" {
			return fail(fmt.Errorf("%w: the server is not a primary", ErrConnection))
		}
	}
	s.pingEvery = c.pingPeriod(ctx, s.conn)
	var err error
	if s.disp, err = newDispatcher(ctx, n.client, s.conn, c.onMessage); err != nil {
		return fail(err)
	}
	n.replicas.invalidate()
	go func() {
		select {
		case <-s.disp.failed:
			s.fail()
		case <-s.failed:
		}
	}()
	return s, nil
}

// failoverAddr is the address go-redis gives the options of a redis.NewFailoverClient.
const failoverAddr = "FailoverClient"

// pingPeriod is a third of rlock.watchdog-idle-ms (the server's watchdog stops renewing a
// holding whose connection sent nothing for that long), or of rlock.watchdog-grace-ms when
// that is set and shorter: go-redis tells nobody that an idle connection broke, so the PING is
// what finds it, and a holding outlives its closed connection only for the grace period.
func (c *Client) pingPeriod(ctx context.Context, conn *redis.Conn) time.Duration {
	every := 10 * time.Second
	reply, err := conn.Do(ctx, "CONFIG", "GET", "rlock.watchdog-*").Result()
	if err != nil {
		return every
	}
	for _, name := range []string{"rlock.watchdog-idle-ms", "rlock.watchdog-grace-ms"} {
		if v, ok := valueOf(reply).field(name); ok {
			if n, ok := v.integer(); ok && n > 0 && time.Duration(n)*time.Millisecond/3 < every {
				every = time.Duration(n) * time.Millisecond / 3
			}
		}
	}
	return every
}

// keepAlive PINGs the session while it lives (the server's watchdog stops renewing a holding
// whose connection sent nothing for rlock.watchdog-idle-ms), and when it fails, re-binds the
// watchdog holdings on a new one; waiters send their own waits again.
func (c *Client) keepAlive(n *node, s *Session) {
	ticker := time.NewTicker(s.pingEvery)
	defer ticker.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-s.lost():
			c.mu.Lock()
			if n.sess == s {
				n.sess = nil
			}
			c.mu.Unlock()
			c.router.changed(context.Background())
			c.rebind(n)
			return
		case <-ticker.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			if _, err := s.do(ctx, "PING"); err == nil {
				if err := s.disp.ping(ctx); err != nil {
					s.fail()
				}
			}
			cancel()
		}
	}
}
