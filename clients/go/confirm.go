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

// confirmCommand is the WAIT (or WAITAOF) to pipeline after a write, and how many replicas
// it needs; nil when there is nothing to wait for.
func (c *Client) confirmCommand(ctx context.Context) ([]string, int, error) {
	cf := c.opts.Confirm
	n := cf.Replicas
	switch cf.Mode {
	case ConfirmOff:
		return nil, 0, nil
	case ConfirmAuto:
		var err error
		if n, err = c.connectedReplicas(ctx); err != nil || n == 0 {
			return nil, 0, err
		}
	}
	if cf.Mode == ConfirmAOF {
		return []string{"WAITAOF", "1", itoa(int64(n)), ms(cf.Timeout)}, n, nil
	}
	if n == 0 {
		return nil, 0, nil
	}
	return []string{"WAIT", itoa(int64(n)), ms(cf.Timeout)}, n, nil
}

func (c *Client) connectedReplicas(ctx context.Context) (int, error) {
	r := &c.replicas
	r.Lock()
	if r.valid && time.Since(r.at) < time.Second {
		n := r.n
		r.Unlock()
		return n, nil
	}
	r.Unlock()
	role, err := c.do(ctx, "ROLE")
	if err != nil {
		return 0, err
	}
	n := 0
	if len(role.elems) >= 3 && role.elems[0].str == "master" {
		n = len(role.elems[2].elems)
	}
	r.Lock()
	r.n, r.at, r.valid = n, time.Now(), true
	r.Unlock()
	return n, nil
}

// write sends a command that changes state, pipelined with the confirmation when confirm is
// set, in one round trip. A reply of nil (nothing taken or released) needs no confirmation.
// Not confirmed in time: the reply with a *NotConfirmedError (or, with Confirm.Warn, a log
// line and no error).
func (c *Client) write(ctx context.Context, extra time.Duration, cmd []string, confirm bool) (value, error) {
	var wait []string
	var need int
	if confirm {
		var err error
		if wait, need, err = c.confirmCommand(ctx); err != nil {
			return value{}, err
		}
	}
	cmds := [][]string{cmd}
	if wait != nil {
		cmds = append(cmds, wait)
	}
	out, err := c.pipeline(ctx, extra, cmds...)
	if err != nil {
		return value{}, err
	}
	if out[0].err != nil {
		return value{}, out[0].err
	}
	if wait == nil || out[0].reply.isNil() {
		return out[0].reply, nil
	}
	return out[0].reply, c.confirmed(out[1], need)
}

// confirm waits for the replicas to have this connection's writes so far.
func (c *Client) confirm(ctx context.Context) error {
	wait, need, err := c.confirmCommand(ctx)
	if err != nil || wait == nil {
		return err
	}
	out, err := c.pipeline(ctx, 0, wait)
	if err != nil {
		return err
	}
	return c.confirmed(out[0], need)
}

func (c *Client) confirmed(r result, need int) error {
	cf := c.opts.Confirm
	if r.err != nil {
		if cf.Mode == ConfirmAOF {
			return fmt.Errorf("rlock: Confirm.Mode ConfirmAOF needs WAITAOF (Redis 7.2 or newer): %w", r.err)
		}
		return r.err
	}
	got := r.reply.num
	if r.reply.kind == '*' && len(r.reply.elems) == 2 { // WAITAOF: [local, replicas]
		got = r.reply.elems[1].num
	}
	if int(got) >= need {
		return nil
	}
	c.replicas.invalidate()
	err := &NotConfirmedError{Confirmed: int(got), Required: need, Timeout: cf.Timeout}
	if cf.Warn {
		cf.Logger("%v", err)
		return nil
	}
	return err
}
