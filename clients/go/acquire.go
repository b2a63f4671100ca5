package rlock

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// spec is what one acquire asks for and how.
type spec struct {
	family    Family
	keys      []string // more than one: RLOCK.ACQUIREALL
	owner     string
	permits   int
	lease     time.Duration
	watchdog  bool
	maxHold   time.Duration
	lockDelay time.Duration
}

func (sp spec) command(id, wait string, notify []string) []string {
	cmd := make([]string, 0, 16+len(sp.keys)) // room for every argument: one allocation
	if len(sp.keys) > 1 {
		cmd = append(cmd, "RLOCK.ACQUIREALL", itoa(int64(len(sp.keys))))
		cmd = append(cmd, sp.keys...)
		cmd = append(cmd, sp.owner)
	} else {
		cmd = append(cmd, sp.family.acquireName(), sp.keys[0], sp.owner)
	}
	switch sp.family {
	case familyRead:
		cmd = append(cmd, "READ")
	case familyWrite:
		cmd = append(cmd, "WRITE")
	case familyPermits:
		cmd = append(cmd, "PERMITS", itoa(int64(sp.permits)))
	}
	cmd = append(cmd, "PX", ms(sp.lease))
	if wait != "" {
		cmd = append(cmd, "WAIT", wait)
		cmd = append(cmd, notify...)
	}
	if sp.watchdog {
		cmd = append(cmd, "WATCHDOG")
	}
	cmd = append(cmd, "ID", id)
	if sp.maxHold > 0 {
		cmd = append(cmd, "MAXHOLD", ms(sp.maxHold))
	}
	if sp.lockDelay > 0 {
		cmd = append(cmd, "LOCKDELAY", ms(sp.lockDelay))
	}
	return cmd
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tokens reads an acquire's reply: one token, or one per key of an ACQUIREALL; nil when not
// granted.
func tokens(v value) []int64 {
	switch v.kind {
	case valInt:
		return []int64{v.num}
	case valList:
		out := make([]int64, len(v.elems))
		for i, e := range v.elems {
			out[i] = e.num
		}
		return out
	}
	return nil
}

// tryAcquire is one attempt that does not wait.
func (c *Client) tryAcquire(ctx context.Context, sp spec) ([]int64, error) {
	reply, err := c.write(ctx, sp.command(newID(), "", nil), true)
	if err != nil {
		var nc *NotConfirmedError
		if errors.As(err, &nc) {
			c.undo(sp, tokens(reply))
		}
		return nil, fromServer(err, sp.keys)
	}
	if t := tokens(reply); t != nil {
		return t, nil
	}
	return nil, notGranted()
}

// acquire waits in the server's queue by NOTIFY (no blocked connection) until the grant,
// the limit (0: none) or the end of ctx. The server's WAIT is the limit alone, never the
// context's deadline: its timeout, whole milliseconds, could come before the context ends and
// be taken for "not granted". So a context that ends returns exactly ctx.Err(), after the wait
// has left the queue (RLOCK.CANCEL); a not granted (*ErrTaken, ErrFailed) means the limit ran
// out.
func (c *Client) acquire(ctx context.Context, sp spec, limit time.Duration) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := c.addWaiter(sp.family, sp.keys, sp.owner)
	defer c.removeWaiter(w)
	id := newID()
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	for {
		wait := "0"
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, notGranted()
			}
			wait = ms(left)
		}
		out, at, err := c.send(ctx, c.waitRequest(w, sp.keys[0], func(notify []string) []string {
			return sp.command(id, wait, notify)
		}))
		if err != nil && ctx.Err() != nil {
			return nil, c.cancelWait(ctx, sp, w)
		}
		if errors.Is(err, ErrConnection) {
			// The server is away: the same ID again until the deadline (it takes over the
			// entry, or answers the grant).
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		if err == nil {
			err = out[0].err
		}
		if err != nil {
			return nil, fromServer(err, sp.keys)
		}
		if t := tokens(out[0].reply); t != nil {
			return c.confirmGrant(ctx, sp, t, at)
		}
		if out[0].reply.str != "WAITING" {
			return nil, notGranted()
		}
		t, err := w.outcome(ctx, c, at.s)
		switch {
		case err == nil: // granted, even if ctx ended meanwhile: it is held
			return c.confirmGrant(ctx, sp, t, target{})
		case errors.Is(err, errRequeue):
			continue
		case ctx.Err() != nil:
			return nil, c.cancelWait(ctx, sp, w)
		}
		return nil, err
	}
}

// confirmGrant makes a grant the caller's: a grant by message (no target) is confirmed with
// RENEW (which starts the watchdog's renewals, and is a write of this connection that the
// replicas can confirm: on Redis 8 and Valkey a WAIT counts only from the connection's last
// command that itself propagated, which a message's grant is not); an immediate one with a
// WAIT for the replicas on the connection that wrote it.
func (c *Client) confirmGrant(ctx context.Context, sp spec, t []int64, at target) ([]int64, error) {
	var err error
	if at.s == nil {
		for _, key := range sp.keys {
			var held bool
			held, err = c.renew(ctx, sp.family, key, sp.owner, sp.lease, sp.watchdog)
			if !held && (err == nil || errors.Is(err, ErrNotConfirmed)) {
				return nil, ErrLost
			}
			if err != nil {
				break
			}
		}
	} else {
		err = c.confirm(ctx, at)
	}
	var nc *NotConfirmedError
	if errors.As(err, &nc) {
		nc.Undone = true
	}
	if err != nil {
		c.undo(sp, t) // never reported held: not confirmed, or the connection failed meanwhile
		return nil, err
	}
	return t, nil
}

// undo releases an acquisition that will not be reported held (not confirmed, cancelled).
func (c *Client) undo(sp spec, t []int64) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if len(sp.keys) > 1 {
		cmd := append([]string{"RLOCK.RELEASEALL", itoa(int64(len(sp.keys)))}, sp.keys...)
		c.pipeline(ctx, append(cmd, sp.owner, "ID", newID()))
		return
	}
	c.pipeline(ctx, releaseCommand(sp.family, sp.keys[0], sp.owner, sp.permits))
}

// cancelWait takes an abandoned wait out of the queue; a grant that raced the cancel (its
// message came before the cancel's reply) is released. When the cancel found the wait no
// longer queued and its outcome has not come, the outcome is still on its way on the
// subscriber, which is another connection: a late "granted" would be taken by this owner's
// next wait on the key for its own (a token issued long before, of a grant long expired). The
// node's session is ended then: its subscriber goes, with whatever it still had to bring.
func (c *Client) cancelWait(caller context.Context, sp spec, w *waiter) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmds := make([][]string, len(sp.keys))
	for i, key := range sp.keys {
		cmds[i] = []string{"RLOCK.CANCEL", key, sp.owner}
	}
	out, at, err := c.pipelineAt(ctx, cmds...)
	removed := int64(0)
	for _, r := range out {
		removed += r.reply.num
	}
	t := w.granted()
	if t != nil {
		c.undo(sp, t)
	} else if err == nil && removed == 0 && at.s != nil {
		at.s.fail()
	}
	return caller.Err()
}

func releaseCommand(k Family, key, owner string, permits int) []string {
	cmd := append(make([]string, 0, 8), k.releaseName(), key, owner)
	switch k {
	case familyRead:
		cmd = append(cmd, "READ")
	case familyWrite:
		cmd = append(cmd, "WRITE")
	case familyPermits:
		cmd = append(cmd, "PERMITS", itoa(int64(permits)))
	}
	return append(cmd, "ID", newID())
}

// release gives back a holding (or, for permits, some of them): the holds (permits) left;
// ErrNotHeld when the owner held none.
func (c *Client) release(ctx context.Context, k Family, key, owner string, permits int) (int64, error) {
	reply, err := c.write(ctx, releaseCommand(k, key, owner, permits), true)
	if err != nil {
		return 0, fromServer(err, []string{key})
	}
	if reply.isNil() {
		return 0, ErrNotHeld
	}
	return reply.num, nil
}
