package rlock

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replyDropper is a TCP proxy in front of a server that, once armed with a command name, lets
// the next command with that name through and then closes the client's connection instead
// of passing its reply on: the server carried the call out, the client never learned.
type replyDropper struct {
	ln      net.Listener
	server  string
	mu      sync.Mutex
	armed   []byte
	dropped atomic.Int64
}

func startReplyDropper(t testing.TB, server string) *replyDropper {
	p := &replyDropper{server: server}
	p.ln = serveProxy(t, func(c net.Conn) { p.pipe(c) })
	return p
}

// serveProxy listens on a free local port and hands each connection to pipe, until the test ends.
func serveProxy(t testing.TB, pipe func(client net.Conn)) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go pipe(c)
		}
	}()
	return ln
}

func (p *replyDropper) arm(command string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = []byte(command)
}

// take reports whether chunk carries the armed command, and disarms it then.
func (p *replyDropper) take(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == nil || !bytes.Contains(chunk, p.armed) {
		return false
	}
	p.armed = nil
	return true
}

func (p *replyDropper) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.server)
	if err != nil {
		client.Close()
		return
	}
	var drop atomic.Bool
	go func() {
		defer client.Close()
		forwardChunks(server, func(chunk []byte) bool {
			if drop.Load() {
				p.dropped.Add(1)
				server.Close()
				return false
			}
			client.Write(chunk)
			return true
		})
	}()
	defer server.Close()
	forwardChunks(client, func(chunk []byte) bool {
		// Set before the command goes on, so its reply cannot pass first.
		if p.take(chunk) {
			drop.Store(true)
		}
		server.Write(chunk)
		return true
	})
}

// forwardChunks reads from until it fails, handing each chunk read to each (which returns
// false to stop).
func forwardChunks(from net.Conn, each func(chunk []byte) bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && !each(buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// lostReplies is a client whose connections go through a replyDropper, another straight to
// the server for the checks, and what the server had answered from its retry memory before.
type lostReplies struct {
	proxy    *replyDropper
	c, check *Client
	ctx      context.Context
	answered int64
}

func startLostReplies(t *testing.T) *lostReplies {
	s := startServer(t)
	proxy := startReplyDropper(t, s.addr)
	check := s.client(t)
	return &lostReplies{
		proxy:    proxy,
		c:        s.client(t, func(o *testOptions) { o.Addr = proxy.ln.Addr().String() }),
		check:    check,
		ctx:      ctxFor(t, 10*time.Second),
		answered: infoField(t, check, "rlock", "rlock_retries_answered"),
	}
}

// expectRetried checks that n replies were dropped and each resent call was answered from the
// server's memory (its request id known), not carried out again.
func (l *lostReplies) expectRetried(t *testing.T, n int64) {
	t.Helper()
	if got := l.proxy.dropped.Load(); got != n {
		t.Fatalf("%d replies dropped, want %d", got, n)
	}
	if got := infoField(t, l.check, "rlock", "rlock_retries_answered") - l.answered; got != n {
		t.Fatalf("%d retries answered from memory, want %d", got, n)
	}
}

// TrySetPermits and AddPermits whose replies are lost are sent again with the same request
// ID: the set answers true again (not "already set"), each add counts once.
func TestLostPermitRepliesCountOnce(t *testing.T) {
	l := startLostReplies(t)
	sem, ctx := l.c.NewSemaphore("s"), l.ctx

	l.proxy.arm("RSEM.SETPERMITS")
	if ok, err := sem.TrySetPermits(ctx, 3); !ok || err != nil {
		t.Fatalf("the resent set: %v %v, want true", ok, err)
	}
	for _, step := range []struct{ n, want int64 }{{2, 5}, {-1, 4}} {
		l.proxy.arm("RSEM.ADDPERMITS")
		if got, err := sem.AddPermits(ctx, step.n); got != step.want || err != nil {
			t.Fatalf("the resent add of %d: %d %v, want %d", step.n, got, err, step.want)
		}
	}
	l.expectRetried(t, 3)
	if n, err := l.check.NewSemaphore("s").Available(ctx); n != 4 || err != nil {
		t.Fatalf("available %d %v, want 4 (each added once)", n, err)
	}
	if ok, err := sem.TrySetPermits(ctx, 9); ok || err != nil {
		t.Fatalf("a second set: %v %v, want false", ok, err)
	}
}

// A TrySetCount whose reply is lost is sent again with the same request ID and answers true
// again, setting nothing; a lost CountDown counts once.
func TestLostLatchRepliesCountOnce(t *testing.T) {
	l := startLostReplies(t)
	latch, ctx := l.c.NewCountDownLatch("l"), l.ctx

	l.proxy.arm("RLATCH.SET")
	if ok, err := latch.TrySetCount(ctx, 3); !ok || err != nil {
		t.Fatalf("the resent set: %v %v, want true", ok, err)
	}
	l.proxy.arm("RLATCH.COUNTDOWN")
	if left, err := latch.CountDown(ctx); left != 2 || err != nil {
		t.Fatalf("the resent count-down: %d %v, want 2", left, err)
	}
	l.expectRetried(t, 2)
	if n, err := l.check.NewCountDownLatch("l").Count(ctx); n != 2 || err != nil {
		t.Fatalf("count %d %v, want 2 (set once, counted down once)", n, err)
	}
	if ok, err := latch.TrySetCount(ctx, 9); ok || err != nil {
		t.Fatalf("a second set: %v %v, want false", ok, err)
	}
}
