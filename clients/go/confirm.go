package rlock

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"
)

// ConfirmMode says which acknowledgement a write waits for before it is reported done.
type ConfirmMode int

const (
	// ConfirmAuto waits for every replica connected to the primary (learned from ROLE,
	// refreshed at most once a second and after a reconnect); nothing is sent without one.
	ConfirmAuto ConfirmMode = iota
	// ConfirmReplicas waits for Confirm.Replicas replicas.
	ConfirmReplicas
	// ConfirmAOF waits for the primary's AOF and Confirm.Replicas replicas' (WAITAOF: Redis 7.2+).
	ConfirmAOF
	// ConfirmOff sends no WAIT: replication stays asynchronous.
	ConfirmOff
)

// Confirm configures confirmation by the replicas (the same defaults as every rlock helper).
type Confirm struct {
	Mode     ConfirmMode
	Replicas int           // for ConfirmReplicas and ConfirmAOF
	Timeout  time.Duration // default 1 s (Redisson's slavesSyncTimeout)
	// Warn logs a write that was not confirmed in time and goes on, instead of failing it
	// (an acquisition that was not confirmed is then reported held).
	Warn bool
	// Logger receives the warnings (default: the standard logger).
	Logger func(format string, args ...interface{})
}

func (cf Confirm) withDefaults() Confirm {
	if cf.Timeout == 0 {
		cf.Timeout = time.Second
	}
	if cf.Logger == nil {
		cf.Logger = log.Printf
	}
	return cf
}

// replicaCache is the number of replicas connected to the primary, as ROLE last said.
type replicaCache struct {
	sync.Mutex
	n     int
	at    time.Time
	valid bool
}

func (r *replicaCache) invalidate() {
	r.Lock()
	r.valid = false
	r.Unlock()
}

// confirmCommand is the WAIT (or WAITAOF) to pipeline after a write on node n's session s,
// and how many replicas it needs; nil when there is nothing to wait for.
func (c *Client) confirmCommand(ctx context.Context, n *node, s *Session) ([]string, int, error) {
	cf := c.confirmCfg
	need := cf.Replicas
	switch cf.Mode {
	case ConfirmOff:
		return nil, 0, nil
	case ConfirmAuto:
		var err error
		if need, err = n.connectedReplicas(ctx, s); err != nil || need == 0 {
			return nil, 0, err
		}
	}
	if cf.Mode == ConfirmAOF {
		return []string{"WAITAOF", "1", itoa(int64(need)), ms(cf.Timeout)}, need, nil
	}
	if need == 0 {
		return nil, 0, nil
	}
	return []string{"WAIT", itoa(int64(need)), ms(cf.Timeout)}, need, nil
}

// connectedReplicas is how many replicas the node's ROLE lists, asked at most once a second.
func (n *node) connectedReplicas(ctx context.Context, s *Session) (int, error) {
	r := &n.replicas
	r.Lock()
	if r.valid && time.Since(r.at) < time.Second {
		count := r.n
		r.Unlock()
		return count, nil
	}
	r.Unlock()
	role, err := s.do(ctx, "ROLE")
	if err != nil {
		return 0, err
	}
	count := 0
	if len(role.elems) >= 3 && role.elems[0].str == "master" {
		count = len(role.elems[2].elems)
	}
	r.Lock()
	r.n, r.at, r.valid = count, time.Now(), true
	r.Unlock()
	return count, nil
}

// write sends a command that changes state to the primary of its key, pipelined with the
// confirmation when confirm is set, in one round trip. A reply of nil (nothing taken or
// released) needs no confirmation. Not confirmed in time: the reply with a
// *NotConfirmedError (or, with Confirm.Warn, a log line and no error).
func (c *Client) write(ctx context.Context, cmd []string, confirm bool) (value, error) {
	var wait []string
	var need int
	out, t, err := c.send(ctx, request{key: routeKey(cmd), build: func(n *node, s *Session) ([][]string, error) {
		wait, need = nil, 0
		if confirm {
			var err error
			if wait, need, err = c.confirmCommand(ctx, n, s); err != nil {
				return nil, err
			}
		}
		if wait == nil {
			return [][]string{cmd}, nil
		}
		return [][]string{cmd, wait}, nil
	}})
	if err != nil {
		return value{}, err
	}
	if out[0].err != nil {
		return value{}, out[0].err
	}
	if wait == nil || out[0].reply.isNil() {
		return out[0].reply, nil
	}
	return out[0].reply, c.confirmed(t.n, out[1], need)
}

// confirm waits for the replicas to have the writes made so far on the target's connection.
func (c *Client) confirm(ctx context.Context, t target) error {
	wait, need, err := c.confirmCommand(ctx, t.n, t.s)
	if err != nil || wait == nil {
		return err
	}
	out, err := t.s.pipeline(ctx, wait)
	if err != nil {
		return err
	}
	return c.confirmed(t.n, out[0], need)
}

func (c *Client) confirmed(n *node, r result, need int) error {
	cf := c.confirmCfg
	if r.err != nil {
		if cf.Mode == ConfirmAOF {
			return fmt.Errorf("rlock: Confirm.Mode ConfirmAOF needs WAITAOF (Redis 7.2 or newer) and appendonly on the primary: %w", r.err)
		}
		return r.err
	}
	got, local := r.reply.num, int64(1)
	if r.reply.kind == valList && len(r.reply.elems) == 2 { // WAITAOF: [local, replicas]
		local, got = r.reply.elems[0].num, r.reply.elems[1].num
	}
	if int(got) >= need && local >= 1 {
		return nil
	}
	n.replicas.invalidate()
	err := &NotConfirmedError{Confirmed: int(got), Required: need, Timeout: cf.Timeout, AOF: cf.Mode == ConfirmAOF && local < 1}
	if cf.Warn {
		cf.Logger("%v", err)
		return nil
	}
	return err
}
