package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrConnection wraps every failure of a connection itself (dial, broken socket, no reply in
// time): the calls that meet it are sent again, unchanged (with their ID), on a new one.
var ErrConnection = errors.New("rlock: connection failed")

// Client gives rlock's lock types over a go-redis client that the service already has: a
// *redis.Client (plain, or redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient,
// configured once with its addresses, TLS, credentials, pool sizes and hooks. rlock takes two
// connections of its own per primary from it (a Session) and leaves its pool to the service.
// Safe for concurrent use; create one per go-redis client and Close it at the end.
type Client struct {
	rdb        redis.UniversalClient
	router     *Router
	confirmCfg Confirm
	timeout    time.Duration
	ownerNS    string // the process-unique prefix of every owner id

	mu       sync.Mutex
	nodes    map[string]*node // by address ("": the one primary of a *redis.Client)
	closed   bool
	stop     chan struct{}
	holdings map[holdAt]map[*Holding]struct{} // by key and owner
	waiters  map[waitAt][]*waiter             // by type, key and owner, in the order they queued
	// closeAlso is closed with the Client: the go-redis client the tests made for it.
	closeAlso io.Closer
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithConfirm sets how writes are confirmed by the replicas (default: by every replica
// connected at the time, within 1 s; nothing sent when there are none).
func WithConfirm(cf Confirm) ClientOption { return func(c *Client) { c.confirmCfg = cf } }

// WithTimeout bounds how long a call keeps sending its command again after a connection
// failure or a reply that says a failover is under way (default 2 s).
func WithTimeout(d time.Duration) ClientOption { return func(c *Client) { c.timeout = d } }

// New makes a Client over the service's go-redis client; it connects at its first call.
// Closing the Client does not close client.
func New(client redis.UniversalClient, opts ...ClientOption) (*Client, error) {
	router, err := newRouter(client)
	if err != nil {
		return nil, err
	}
	c := &Client{
		rdb:      client,
		router:   router,
		timeout:  2 * time.Second,
		ownerNS:  newID(),
		stop:     make(chan struct{}),
		nodes:    map[string]*node{},
		holdings: map[holdAt]map[*Holding]struct{}{},
		waiters:  map[waitAt][]*waiter{},
	}
	for _, o := range opts {
		o(c)
	}
	if c.timeout <= 0 {
		return nil, errors.New("rlock: WithTimeout needs a positive duration")
	}
	if c.confirmCfg.Replicas < 0 || c.confirmCfg.Timeout < 0 {
		return nil, errors.New("rlock: WithConfirm needs Replicas and Timeout of 0 or more")
	}
	c.confirmCfg = c.confirmCfg.withDefaults()
	return c, nil
}

// Close ends rlock's own connections: every watchdog holding of this client ends at once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	var open []*Session
	for _, n := range c.nodes {
		if n.sess != nil {
			open = append(open, n.sess)
			n.sess = nil
		}
	}
	c.mu.Unlock()
	for _, s := range open {
		s.fail()
	}
	if c.closeAlso != nil {
		return c.closeAlso.Close()
	}
	return nil
}

var errClientClosed = errors.New("rlock: client closed")

// Do sends one command on rlock's own connection to the primary of its first argument's key
// and returns its reply converted to Go values: string, int64, nil, []interface{} (maps as
// flat lists) or an error reply as an error. For tests and tools; the lock types do not need
// it.
func (c *Client) Do(ctx context.Context, args ...string) (interface{}, error) {
	v, err := c.do(ctx, args...)
	if err != nil {
		return nil, err
	}
	return v.native(), nil
}

// newID is a random 128-bit id in hex: request ids and owner ids.
func newID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	var out [32]byte
	hex.Encode(out[:], b[:])
	return string(out[:])
}

var ownerSeq struct {
	sync.Mutex
	n uint64
}

// newOwner is a fresh owner id: the client's random prefix and a counter (Redisson's
// "<uuid>:<thread>" shape; in Go, one per lock value).
func (c *Client) newOwner() string {
	ownerSeq.Lock()
	ownerSeq.n++
	n := ownerSeq.n
	ownerSeq.Unlock()
	return c.ownerNS + ":" + strconv.FormatUint(n, 10)
}

func ms(d time.Duration) string {
	n := d.Milliseconds()
	if n < 1 && d > 0 {
		n = 1
	}
	return strconv.FormatInt(n, 10)
}
