package rlock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// session is one connection to the primary with what waiting by NOTIFY needs: on RESP3 the
// connection itself is subscribed to its channel and keeps running commands; on RESP2 a
// second connection subscribes and the waits name its client id.
type session struct {
	conn   *conn
	sub    *conn    // RESP2 only
	notify []string // "NOTIFY" or "NOTIFY <id of sub>"
	// A third of the server's rlock.watchdog-idle-ms: the PING period while idle.
	pingEvery time.Duration
	failed    chan struct{} // closed when either connection fails
}

func (s *session) close(err error) {
	s.conn.close(err)
	if s.sub != nil {
		s.sub.close(err)
	}
}

// lost is closed when either connection of the session fails.
func (s *session) lost() <-chan struct{} { return s.failed }

// watch closes failed when either connection fails, and then closes both.
func (s *session) watch() {
	s.failed = s.conn.done
	if s.sub == nil {
		return
	}
	s.failed = make(chan struct{})
	go func() {
		select {
		case <-s.conn.done:
		case <-s.sub.done:
		}
		s.close(ErrConnection)
		close(s.failed)
	}()
}

// node is one server the client talks to: the primary (addr "", found at each connect from
// Options.Addr or the sentinels), or in a Cluster one primary by address. Each has one
// session, dialled once whoever asks, and the count of its replicas.
type node struct {
	addr     string
	sess     *session
	dialing  chan struct{}
	replicas replicaCache
}

// nodeAt is the node at addr ("": the one primary of a client that is not a Cluster's).
func (c *Client) nodeAt(addr string) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[addr]
	if n == nil {
		n = &node{addr: addr}
		c.nodes[addr] = n
	}
	return n
}

// session returns the node's current session, connecting (once, whoever asks) when there is
// none.
func (c *Client) session(ctx context.Context, n *node) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errClientClosed
		}
		if s := n.sess; s != nil && !s.conn.closed() && (s.sub == nil || !s.sub.closed()) {
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
		s, err := c.connect(ctx, n)
		c.mu.Lock()
		close(n.dialing)
		n.dialing = nil
		if err == nil && c.closed {
			s.close(errClientClosed)
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

func (c *Client) connect(ctx context.Context, n *node) (*session, error) {
	addr := n.addr
	if addr == "" {
		var err error
		if addr, err = c.primaryAddr(ctx); err != nil {
			return nil, err
		}
	}
	o := c.dialOptions(addr)
	cn, err := dial(ctx, o, c.onPush)
	if err != nil {
		return nil, err
	}
	s := &session{conn: cn, notify: []string{"NOTIFY"}, pingEvery: 10 * time.Second}
	fail := func(err error) (*session, error) {
		s.close(err)
		return nil, err
	}
	if c.opts.MasterName != "" {
		if err := checkPrimary(ctx, cn); err != nil {
			return fail(err)
		}
	}
	if idle, err := cn.do(ctx, "CONFIG", "GET", "rlock.watchdog-idle-ms"); err == nil && len(idle.elems) == 2 {
		if n, ok := idle.elems[1].integer(); ok && n > 0 {
			s.pingEvery = time.Duration(n) * time.Millisecond / 3
		}
	}
	receiver := cn
	if !cn.resp3 {
		if s.sub, err = dial(ctx, o, c.onPush); err != nil {
			return fail(err)
		}
		id, err := s.sub.do(ctx, "CLIENT", "ID")
		if err != nil {
			return fail(err)
		}
		s.notify = []string{"NOTIFY", strconv.FormatInt(id.num, 10)}
		receiver = s.sub
	}
	channel, err := receiver.do(ctx, "RLOCK.CHANNEL")
	if err != nil {
		return fail(fmt.Errorf("rlock: is the module loaded? RLOCK.CHANNEL: %w", err))
	}
	if err := receiver.subscribe(ctx, channel.str); err != nil {
		return fail(err)
	}
	n.replicas.invalidate()
	s.watch()
	return s, nil
}

func (c *Client) dialOptions(addr string) dialOptions {
	db := c.opts.DB
	if c.cluster() {
		db = 0 // a Cluster has only database 0
	}
	return dialOptions{
		addr: addr, username: c.opts.Username, password: c.opts.Password, db: db,
		tls: c.opts.TLSConfig, dialTimeout: c.opts.DialTimeout, timeout: c.opts.Timeout,
		protocol: c.opts.Protocol,
	}
}

// keepAlive PINGs the session while it lives (the server's watchdog stops renewing a holding
// whose connection sent nothing for rlock.watchdog-idle-ms), and when it fails, reconnects
// and re-binds the watchdog holdings; waiters re-send their own waits.
func (c *Client) keepAlive(n *node, s *session) {
	lost := s.lost()
	ticker := time.NewTicker(s.pingEvery)
	defer ticker.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-lost:
			c.mu.Lock()
			if n.sess == s {
				n.sess = nil
			}
			c.mu.Unlock()
			s.close(ErrConnection)
			c.rebind(n)
			return
		case <-ticker.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
			s.conn.do(ctx, "PING")
			if s.sub != nil {
				s.sub.do(ctx, "PING")
			}
			cancel()
		}
	}
}
