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

// session returns the current session, connecting (once, whoever asks) when there is none.
func (c *Client) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errClientClosed
		}
		if s := c.sess; s != nil && !s.conn.closed() && (s.sub == nil || !s.sub.closed()) {
			c.mu.Unlock()
			return s, nil
		}
		if c.dialing != nil {
			wait := c.dialing
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		c.dialing = make(chan struct{})
		c.mu.Unlock()
		s, err := c.connect(ctx)
		c.mu.Lock()
		close(c.dialing)
		c.dialing = nil
		if err == nil && c.closed {
			s.close(errClientClosed)
			err = errClientClosed
		}
		if err == nil {
			c.sess = s
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		go c.keepAlive(s)
		return s, nil
	}
}

func (c *Client) connect(ctx context.Context) (*session, error) {
	addr, err := c.primaryAddr(ctx)
	if err != nil {
		return nil, err
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
	c.replicas.invalidate()
	s.watch()
	return s, nil
}

func (c *Client) dialOptions(addr string) dialOptions {
	return dialOptions{
		addr: addr, username: c.opts.Username, password: c.opts.Password, db: c.opts.DB,
		tls: c.opts.TLSConfig, dialTimeout: c.opts.DialTimeout, timeout: c.opts.Timeout,
		protocol: c.opts.Protocol,
	}
}

// keepAlive PINGs the session while it lives (the server's watchdog stops renewing a holding
// whose connection sent nothing for rlock.watchdog-idle-ms), and when it fails, reconnects
// and re-binds the watchdog holdings; waiters re-send their own waits.
func (c *Client) keepAlive(s *session) {
	lost := s.lost()
	ticker := time.NewTicker(s.pingEvery)
	defer ticker.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-lost:
			c.mu.Lock()
			if c.sess == s {
				c.sess = nil
			}
			c.mu.Unlock()
			s.close(ErrConnection)
			c.rebind()
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
