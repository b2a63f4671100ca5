package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoLeader is Leader's answer when nobody holds the election (etcd's ErrElectionNoLeader).
var ErrNoLeader = errors.New("rlock: election has no leader")

// LeaderInfo is who leads: the candidate value it campaigned with and its term (the lock's
// fencing token, which only grows).
type LeaderInfo struct {
	Candidate string
	Term      int64
}

// Election is a leader election over one lock key, in etcd's shape. Candidates queue in FIFO
// order; the leader stays leader while its client's connection lives (the server's
// watchdog), and a crashed leader's successor is elected within milliseconds. There is no
// Proclaim: the candidate value is the lock's owner id, which a holding cannot change
// (advertise changing data under a key written with Guard instead).
type Election struct {
	c    *Client
	name string
	opts []Option
	hd   *handle
}

// NewElection makes an election on the lock key name.
func (c *Client) NewElection(name string, opts ...Option) *Election {
	return &Election{c: c, name: name, opts: opts}
}

// Campaign waits until this candidate leads (or ctx ends). The candidate value is what
// observers see: put the candidate's address in it; it must be unique among candidates.
func (e *Election) Campaign(ctx context.Context, candidate string) error {
	hd := e.c.newHandle(e.name, append(e.opts, WithValue(candidate)))
	if _, err := hd.take(ctx, familyLock, 0, true); err != nil {
		return err
	}
	e.hd = hd
	return nil
}

// Resign gives up leadership; the next candidate in line leads.
func (e *Election) Resign(ctx context.Context) error {
	if e.hd == nil {
		return nil
	}
	_, err := e.hd.give(ctx, familyLock, 0)
	e.hd = nil
	return err
}

// Term is this candidate's term while it leads (0 otherwise); Lost is closed when its
// leadership ended other than by Resign.
func (e *Election) Term() int64 {
	if e.hd == nil {
		return 0
	}
	return e.hd.token(familyLock)
}

func (e *Election) Lost() <-chan struct{} {
	if e.hd == nil {
		return closedChan
	}
	return e.hd.lost(familyLock)
}

// Guard runs one write only while this candidate leads with its term (RLOCK.GUARD).
func (e *Election) Guard(ctx context.Context, args ...string) (interface{}, error) {
	if e.hd == nil {
		return nil, ErrNotHeld
	}
	return e.hd.guard(ctx, e.Term(), args)
}

// Leader is the current leader (RLOCK.LEADER), ErrNoLeader when there is none.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	v, err := e.c.do(ctx, "RLOCK.LEADER", e.name)
	if err != nil {
		return LeaderInfo{}, fromServer(err, []string{e.name})
	}
	return leaderOf(v)
}

func leaderOf(v value) (LeaderInfo, error) {
	if v.isNil() {
		return LeaderInfo{}, ErrNoLeader
	}
	owner, _ := v.field("owner")
	token, _ := v.field("token")
	term, _ := token.integer()
	return LeaderInfo{Candidate: owner.str, Term: term}, nil
}

// Observe sends every change of leader (and the leader at the start) until ctx ends, then
// closes the channel. It listens to the key's keyspace events (the server needs the module
// class on: notify-keyspace-events Kd, or Kdgx) on a connection of its own and reads
// RLOCK.LEADER at each event and after every reconnect; between changes nothing is sent.
// A zero LeaderInfo means that nobody leads.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	out := make(chan LeaderInfo)
	go e.observe(ctx, out)
	return out
}

func (e *Election) observe(ctx context.Context, out chan<- LeaderInfo) {
	defer close(out)
	var last *LeaderInfo
	for ctx.Err() == nil {
		w, err := e.watch(ctx)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for ctx.Err() == nil {
			v, err := w.node.Do(ctx, "RLOCK.LEADER", e.name).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				break
			}
			now, err := leaderOf(valueOf(v))
			if err != nil && !errors.Is(err, ErrNoLeader) {
				break
			}
			if last == nil || *last != now {
				last = &now
				select {
				case out <- now:
				case <-ctx.Done():
				}
			}
			if !e.awaitEvent(ctx, w) {
				break
			}
		}
		w.close()
	}
}

// watcher is an observer's subscription to the election key's keyspace events, on a
// connection of its own to the primary that serves the key, which is known by its run_id.
type watcher struct {
	node    *redis.Client
	addr    string
	private *redis.Client
	pubsub  *redis.PubSub
	events  <-chan *redis.Message
	runID   string
}

func (w *watcher) close() {
	w.pubsub.Close()
	w.private.Close()
}

// awaitEvent waits for the next keyspace event of the key (true), checking every second that
// the server it listens to is still the primary that serves the key (false when it turned
// replica in a failover: no event would come from it any more).
func (e *Election) awaitEvent(ctx context.Context, w *watcher) bool {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case _, ok := <-w.events:
			return ok
		case <-ctx.Done():
			return false
		case <-tick.C:
			if addr, _, err := e.c.router.nodeFor(ctx, e.name); err != nil || addr != w.addr {
				return false
			}
			if id, err := primaryRunID(ctx, w.node); err != nil || id != w.runID {
				return false
			}
		}
	}
}

// primaryRunID is the run_id of the server cn reaches, or an error if it is not a primary.
func primaryRunID(ctx context.Context, cn interface {
	Do(ctx context.Context, args ...interface{}) *redis.Cmd
}) (string, error) {
	role, err := cn.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(role) == 0 || role[0] != "master" {
		return "", fmt.Errorf("%w: the server is not a primary", ErrConnection)
	}
	info, err := cn.Do(ctx, "INFO", "server").Text()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: no run_id in INFO server", ErrConnection)
}

// watch subscribes to the election key's keyspace channel on the primary that serves it.
func (e *Election) watch(ctx context.Context) (*watcher, error) {
	addr, nc, err := e.c.router.nodeFor(ctx, e.name)
	if err != nil {
		return nil, err
	}
	ids := make(chan string, 8)
	w := &watcher{node: nc, addr: addr}
	w.private = privateClient(nc, func(ctx context.Context, cn *redis.Conn) error {
		id, err := primaryRunID(ctx, cn)
		if err == nil {
			select {
			case ids <- id:
			default:
			}
		}
		return err
	})
	channel := "__keyspace@" + strconv.Itoa(nc.Options().DB) + "__:" + e.name
	w.pubsub = w.private.Subscribe(ctx, channel)
	for {
		m, err := w.pubsub.Receive(ctx)
		if err != nil {
			w.close()
			return nil, err
		}
		if s, ok := m.(*redis.Subscription); ok && s.Channel == channel {
			break
		}
	}
	select {
	case w.runID = <-ids:
	default:
		w.close()
		return nil, fmt.Errorf("%w: the observer's server is unknown", ErrConnection)
	}
	w.events = w.pubsub.Channel()
	return w, nil
}
