package rlock

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// ErrConnection wraps every failure of the connection itself (dial, broken socket, no reply
// in time): the calls that meet it are retried once, unchanged, on a fresh connection.
var ErrConnection = errors.New("rlock: connection failed")

// conn is one pipelined connection: any number of goroutines send on it at once, replies
// come back in order, and push messages (RESP3 pushes, or RESP2 subscriber messages) go to
// onPush from the reader goroutine.
type conn struct {
	nc      net.Conn
	wmu     sync.Mutex // orders the writes with the queue of pending calls
	w       *bufio.Writer
	mu      sync.Mutex
	pending []*call
	err     error
	done    chan struct{}
	onPush  func(value)
	resp3   bool
	timeout time.Duration
}

type call struct {
	reply value
	err   error
	done  chan struct{}
	// A RESP3 SUBSCRIBE is answered by a push, not a reply.
	push bool
}

// dialOptions is what a connection needs from Options.
type dialOptions struct {
	addr, username, password string
	db                       int
	tls                      *tls.Config
	dialTimeout, timeout     time.Duration
	protocol                 int
}

func dial(ctx context.Context, o dialOptions, onPush func(value)) (*conn, error) {
	d := net.Dialer{Timeout: o.dialTimeout, KeepAlive: 30 * time.Second}
	var nc net.Conn
	var err error
	if o.tls != nil {
		td := tls.Dialer{NetDialer: &d, Config: o.tls}
		nc, err = td.DialContext(ctx, "tcp", o.addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", o.addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConnection, err)
	}
	c := &conn{nc: nc, w: bufio.NewWriter(nc), done: make(chan struct{}), onPush: onPush, timeout: o.timeout}
	go c.readLoop(bufio.NewReaderSize(nc, 16<<10))
	if err := c.handshake(ctx, o); err != nil {
		c.close(err)
		return nil, err
	}
	return c, nil
}

// handshake speaks RESP3 when the server can (HELLO 3, with AUTH in it), else RESP2 with
// AUTH, then selects the database.
func (c *conn) handshake(ctx context.Context, o dialOptions) error {
	if o.protocol != 2 {
		hello := []string{"HELLO", "3"}
		if o.password != "" {
			user := o.username
			if user == "" {
				user = "default"
			}
			hello = append(hello, "AUTH", user, o.password)
		}
		_, err := c.do(ctx, hello...)
		var se *serverError
		switch {
		case err == nil:
			c.resp3 = true
		case errors.As(err, &se) && (se.code() == "NOPROTO" || strings.Contains(se.msg, "unknown command")):
		default:
			return err
		}
	}
	if !c.resp3 && o.password != "" {
		auth := []string{"AUTH", o.password}
		if o.username != "" {
			auth = []string{"AUTH", o.username, o.password}
		}
		if _, err := c.do(ctx, auth...); err != nil {
			return err
		}
	}
	if o.db != 0 {
		if _, err := c.do(ctx, "SELECT", fmt.Sprint(o.db)); err != nil {
			return err
		}
	}
	return nil
}

func (c *conn) readLoop(r *bufio.Reader) {
	for {
		v, err := readValue(r)
		if err != nil {
			c.close(fmt.Errorf("%w: %v", ErrConnection, err))
			return
		}
		if v.kind == '>' && c.answersSubscribe(v) {
			continue
		}
		if v.kind == '>' || (!c.resp3 && isSubscriberMessage(v)) {
			if c.onPush != nil {
				c.onPush(v)
			}
			continue
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			c.close(fmt.Errorf("%w: a reply nobody asked for", ErrConnection))
			return
		}
		next := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		if v.kind == '-' {
			next.err = &serverError{msg: v.str}
		} else {
			next.reply = v
		}
		close(next.done)
	}
}

// answersSubscribe hands a RESP3 subscribe confirmation to the SUBSCRIBE waiting for it.
func (c *conn) answersSubscribe(v value) bool {
	if len(v.elems) == 0 || v.elems[0].str != "subscribe" {
		return false
	}
	c.mu.Lock()
	if len(c.pending) == 0 || !c.pending[0].push {
		c.mu.Unlock()
		return false
	}
	next := c.pending[0]
	c.pending = c.pending[1:]
	c.mu.Unlock()
	next.reply = v
	close(next.done)
	return true
}

// subscribe subscribes to one channel and waits for the confirmation.
func (c *conn) subscribe(ctx context.Context, channel string) error {
	calls, err := c.sendCalls([]bool{c.resp3}, []string{"SUBSCRIBE", channel})
	if err != nil {
		return err
	}
	_, err = c.wait(ctx, calls[0], 0)
	return err
}

// isSubscriberMessage tells a RESP2 subscriber's messages from the replies to its commands.
func isSubscriberMessage(v value) bool {
	return v.kind == '*' && len(v.elems) >= 3 && (v.elems[0].str == "message" || v.elems[0].str == "pmessage")
}

// send queues the commands in one write (a pipeline) and returns their calls.
func (c *conn) send(cmds ...[]string) ([]*call, error) {
	return c.sendCalls(nil, cmds...)
}

func (c *conn) sendCalls(push []bool, cmds ...[]string) ([]*call, error) {
	calls := make([]*call, len(cmds))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	for i := range cmds {
		calls[i] = &call{done: make(chan struct{}), push: i < len(push) && push[i]}
	}
	c.pending = append(c.pending, calls...)
	c.mu.Unlock()
	for _, cmd := range cmds {
		writeCommand(c.w, cmd)
	}
	if err := c.w.Flush(); err != nil {
		err = fmt.Errorf("%w: %v", ErrConnection, err)
		c.close(err)
		return nil, err
	}
	return calls, nil
}

// wait returns a call's reply. A context that ends abandons the call (its reply is read and
// dropped later); a server that does not answer within the timeout (plus extra, for a call
// the server may hold that long) closes the connection, which fails every call on it.
func (c *conn) wait(ctx context.Context, cl *call, extra time.Duration) (value, error) {
	timer := time.NewTimer(c.timeout + extra)
	defer timer.Stop()
	select {
	case <-cl.done:
		return cl.reply, cl.err
	case <-ctx.Done():
		return value{}, ctx.Err()
	case <-timer.C:
		err := fmt.Errorf("%w: no reply within %v", ErrConnection, c.timeout+extra)
		c.close(err)
		return value{}, err
	}
}

func (c *conn) do(ctx context.Context, args ...string) (value, error) {
	calls, err := c.send(args)
	if err != nil {
		return value{}, err
	}
	return c.wait(ctx, calls[0], 0)
}

func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
	close(c.done)
}

func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
