package rlock

import (
	"context"
	"errors"
	"strconv"
	"time"
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
	if _, err := hd.take(ctx, kindLock, 0, true); err != nil {
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
	_, err := e.hd.give(ctx, kindLock, 0)
	e.hd = nil
	return err
}

// Term is this candidate's term while it leads (0 otherwise); Lost is closed when its
// leadership ended other than by Resign.
func (e *Election) Term() int64 {
	if e.hd == nil {
		return 0
	}
	return e.hd.token(kindLock)
}

func (e *Election) Lost() <-chan struct{} {
	if e.hd == nil {
		return closedChan
	}
	return e.hd.lost(kindLock)
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
		events := make(chan struct{}, 1)
		cn, err := e.watch(ctx, events)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for ctx.Err() == nil && !cn.closed() {
			v, err := cn.do(ctx, "RLOCK.LEADER", e.name)
			if err != nil {
				break
			}
			now, err := leaderOf(v)
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
			if !e.awaitEvent(ctx, cn, events) {
				break
			}
		}
		cn.close(errClientClosed)
	}
}

// awaitEvent waits for the next keyspace event of the key (true), checking every second that
// the server is still the primary that serves it (false when it turned replica in a
// failover: no event would come from it any more).
func (e *Election) awaitEvent(ctx context.Context, cn *conn, events chan struct{}) bool {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-events:
			return true
		case <-cn.done:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
			if checkPrimary(ctx, cn) != nil {
				return false
			}
		}
	}
}

// watch connects to the primary and subscribes to the election key's keyspace channel, in
// RESP3 (every server rlock loads into has it), so the subscribed connection keeps running
// RLOCK.LEADER.
func (e *Election) watch(ctx context.Context, events chan struct{}) (*conn, error) {
	addr, err := e.c.addrFor(ctx, e.name)
	if err != nil {
		return nil, err
	}
	o := e.c.dialOptions(addr)
	o.protocol = 3
	cn, err := dial(ctx, o, func(value) {
		select {
		case events <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	channel := "__keyspace@" + strconv.Itoa(o.db) + "__:" + e.name
	if err := cn.subscribe(ctx, channel); err != nil {
		cn.close(err)
		return nil, err
	}
	return cn, nil
}
