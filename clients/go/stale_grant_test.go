package rlock

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// messageHolder is a TCP proxy in front of a server that can hold back what the server sends
// to the subscriber connections open at the time (the ones that sent SUBSCRIBE), and pass it
// on later in order: a NOTIFY message late on a slow link, as the jepsen runs saw under a
// flapping partition (TCP retransmitted it seconds later).
type messageHolder struct {
	ln     net.Listener
	server string
	mu     sync.Mutex
	pipes  []*heldPipe
}

// heldPipe is one proxied connection; while held, the server's bytes wait in buf.
type heldPipe struct {
	client     net.Conn
	subscriber bool
	held       bool
	buf        bytes.Buffer
}

func startMessageHolder(t testing.TB, server string) *messageHolder {
	p := &messageHolder{server: server}
	p.ln = serveProxy(t, func(c net.Conn) { p.pipe(c) })
	return p
}

// hold keeps back the server's bytes to every subscriber connection open now.
func (p *messageHolder) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, hp := range p.pipes {
		hp.held = hp.held || hp.subscriber
	}
}

// heldGrants counts the "granted" messages held back.
func (p *messageHolder) heldGrants() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, hp := range p.pipes {
		n += bytes.Count(hp.buf.Bytes(), []byte("granted "))
	}
	return n
}

// release passes on what was held back, in order, and holds nothing more.
func (p *messageHolder) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, hp := range p.pipes {
		hp.held = false
		hp.client.Write(hp.buf.Bytes())
		hp.buf.Reset()
	}
}

func (p *messageHolder) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.server)
	if err != nil {
		client.Close()
		return
	}
	hp := &heldPipe{client: client}
	p.mu.Lock()
	p.pipes = append(p.pipes, hp)
	p.mu.Unlock()
	go func() {
		defer client.Close()
		forwardChunks(server, func(chunk []byte) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			if hp.held {
				hp.buf.Write(chunk)
			} else {
				client.Write(chunk)
			}
			return true
		})
	}()
	defer server.Close()
	forwardChunks(client, func(chunk []byte) bool {
		if bytes.Contains(bytes.ToUpper(chunk), []byte("SUBSCRIBE")) {
			p.mu.Lock()
			hp.subscriber = true
			p.mu.Unlock()
		}
		server.Write(chunk)
		return true
	})
}

// A wait abandoned by its context whose grant message is still on its way (the server granted
// it, the message is late): a later wait of the same owner on the same key must not take
// that stale message for its own grant. Found by jepsen's cluster-confirm-off--flapping: a Go
// worker was told a token issued 13 s before (its abandoned wait's grant, long expired) for a
// grant the server made just then with a new token.
func TestALateGrantOfAnAbandonedWaitIsNotTakenByTheNextWait(t *testing.T) {
	s := startServer(t)
	proxy := startMessageHolder(t, s.addr)
	c := s.client(t, func(o *testOptions) { o.Addr = proxy.ln.Addr().String() })
	check := s.client(t)
	ctx := ctxFor(t, 30*time.Second)
	other := check.NewMutex("stale", WithExpiry(10*time.Second), WithWait(10*time.Second))
	if err := other.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	m := c.NewMutex("stale", WithExpiry(time.Second), WithWait(20*time.Second))

	// The first wait: queued, granted while its message is held back, abandoned by its context.
	first, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.LockContext(first) }()
	eventually(t, "the first wait to queue", func() bool { return waiters(t, check, "stale") == 1 })
	proxy.hold()
	if _, err := other.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the grant message to be held back", func() bool { return proxy.heldGrants() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned wait: %v, want context.Canceled", err)
	}

	// The other owner takes the lock once the first grant's lease has run out; then the
	// second wait queues behind it and is granted when it is released.
	if err := other.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	older := other.Token()
	go func() { done <- m.LockContext(ctx) }()
	eventually(t, "the second wait to queue", func() bool { return waiters(t, check, "stale") == 1 })
	if _, err := other.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	// The stale message comes first, then the second wait's own grant (on the same
	// subscriber, if the client still uses it).
	var err error
	eventually(t, "the second wait's grant", func() bool {
		select {
		case err = <-done:
			return true
		default:
		}
		if proxy.heldGrants() == 2 {
			proxy.release()
		}
		return false
	})
	proxy.release()
	if err != nil {
		t.Fatal(err)
	}
	if m.Token() <= older {
		t.Fatalf("the second wait reports token %d, not above %d (the holding before it): the abandoned wait's grant", m.Token(), older)
	}
}
