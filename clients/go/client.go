package rlock

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"
)

// Options says how to reach the server. Only Addr (or SentinelAddrs and MasterName) is
// needed; the zero value of everything else is a sensible default.
type Options struct {
	Addr               string // "host:port"; default "127.0.0.1:6379"
	Username, Password string // ACL user (or only a password: the default user)
	DB                 int
	TLSConfig          *tls.Config   // non-nil: connect with TLS
	DialTimeout        time.Duration // default 5 s
	// Timeout bounds the wait for each reply (default 2 s); a server silent for longer has
	// its connection closed and the call retried once on a new one (with Sentinel or a
	// Cluster, and after a reply that says a failover is under way, until Timeout has passed).
	Timeout time.Duration
	// Protocol 2 forces RESP2 (a second, subscribed connection receives the NOTIFY messages);
	// 0 speaks RESP3 where the server can and falls back to RESP2.
	Protocol int

	// Sentinel: when MasterName is set, the primary is asked of these sentinels.
	SentinelAddrs                      []string
	MasterName                         string
	SentinelUsername, SentinelPassword string

	// ClusterAddrs: when set, a Redis Cluster reached through these nodes (any few): each key
	// goes to its slot's primary, with a session of its own on each primary.
	ClusterAddrs []string

	// Confirm: how acquisitions and releases are confirmed by the replicas (default: by every
	// replica connected at the time, within 1 s; nothing sent when there are none).
	Confirm Confirm
}

// Client is the connection to one rlock server (or Sentinel-managed primary, or the primaries
// of a Redis Cluster) that every lock of it shares: one RESP3 connection per primary carries
// every call, every wait (NOTIFY) and every watchdog holding of the keys it serves, PINGed
// while idle, re-established and re-bound after a failure.
// Safe for concurrent use; create one per server and Close it at the end.
type Client struct {
	opts    Options
	ownerNS string // the process-unique prefix of every owner id

	mu       sync.Mutex
	nodes    map[string]*node // by address ("": the one primary of a client not a Cluster's)
	slots    slotMap
	closed   bool
	stop     chan struct{}
	holdings map[string]map[*holding]struct{} // by key and owner
	waiters  map[string][]*waiter             // by type, key and owner, in the order they queued
}

// NewClient makes a client; it connects at its first call.
func NewClient(opts Options) *Client {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:6379"
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	opts.Confirm = opts.Confirm.withDefaults()
	return &Client{
		opts:     opts,
		ownerNS:  newID(),
		stop:     make(chan struct{}),
		nodes:    map[string]*node{},
		holdings: map[string]map[*holding]struct{}{},
		waiters:  map[string][]*waiter{},
	}
}

// Close closes the connection: every watchdog holding of this client ends at once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	var open []*session
	for _, n := range c.nodes {
		if n.sess != nil {
			open = append(open, n.sess)
			n.sess = nil
		}
	}
	c.mu.Unlock()
	for _, s := range open {
		s.close(errClientClosed)
	}
	return nil
}

var errClientClosed = errors.New("rlock: client closed")

// Do sends one command and returns its reply converted to Go values: string, int64, nil,
// []interface{} (arrays and maps as flat lists) or an error reply as an error. In a Cluster
// it goes to the primary of its first argument's slot. For tests and tools; the lock types
// do not need it.
func (c *Client) Do(ctx context.Context, args ...string) (interface{}, error) {
	v, err := c.do(ctx, args...)
	if err != nil {
		return nil, err
	}
	return v.native(), nil
}

func (v value) native() interface{} {
	switch v.kind {
	case '$':
		return v.str
	case ':':
		return v.num
	case '*', '%', '>':
		out := make([]interface{}, len(v.elems))
		for i, e := range v.elems {
			out[i] = e.native()
		}
		return out
	}
	return nil
}

// result is one reply of a pipeline: a server error stays with its command.
type result struct {
	reply value
	err   error
}

func (s *session) pipeline(ctx context.Context, extra time.Duration, cmds ...[]string) ([]result, error) {
	calls, err := s.conn.send(cmds...)
	if err != nil {
		return nil, err
	}
	out := make([]result, len(calls))
	for i, cl := range calls {
		out[i].reply, out[i].err = s.conn.wait(ctx, cl, extra)
		var se *serverError
		if out[i].err != nil && !errors.As(out[i].err, &se) {
			return nil, out[i].err
		}
		extra = 0
	}
	return out, nil
}

// newID is a random 128-bit id in hex: request ids and owner ids.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
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
