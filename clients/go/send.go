package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// request is one round trip to the primary of key: build makes the commands for the node and
// session they go to (a WAIT for that node's replicas, a NOTIFY naming that session).
type request struct {
	key   string
	once  bool // never sent again after a connection failure (a write without ID)
	build func(n *node, s *Session) ([][]string, error)
}

// target is where a request was answered: a wait's messages come on that session, and a
// confirmation goes on its connection.
type target struct {
	n *node
	s *Session
}

// send sends the request in one round trip to the primary that serves its key and returns
// the replies (a server error stays with its command). After MOVED it asks go-redis to reload
// the slot map and sends again; after ASK it sends ASKING and the command to the node named;
// after a connection failure or a reply that says the topology is changing (READONLY,
// TRYAGAIN, CLUSTERDOWN ...) it sends again, unchanged, for up to the client's timeout. Every
// call that changes state carries an ID (or is idempotent), so a command sent twice never
// counts twice.
func (c *Client) send(ctx context.Context, r request) ([]result, target, error) {
	deadline := time.Now().Add(c.timeout)
	var ask string
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 && (attempt >= 40 || time.Now().After(deadline) && attempt >= 2) {
			return nil, target{}, lastErr
		}
		var n *node
		var err error
		if ask != "" {
			nc, aerr := c.router.nodeAt(ctx, ask)
			n, err = c.nodeAt(ask, nc), aerr
		} else {
			n, err = c.nodeFor(ctx, r.key)
		}
		asking := ask != ""
		ask = ""
		var s *Session
		var out []result
		if err == nil {
			s, err = c.session(ctx, n)
		}
		if err == nil {
			out, err = c.roundTrip(ctx, r, n, s, asking)
		}
		if err != nil && ctx.Err() != nil {
			return nil, target{}, ctx.Err()
		}
		if err != nil {
			if !errors.Is(err, ErrConnection) || r.once && s != nil {
				return nil, target{}, err
			}
			lastErr = err
			c.topologyChanged(ctx, attempt)
			continue
		}
		if kind, addr := redirect(out[0].err, n.addr); kind != "" && c.router.isCluster() {
			lastErr = out[0].err
			if kind == "ASK" {
				ask = addr
			} else {
				c.topologyChanged(ctx, attempt)
			}
			continue
		}
		if busy, code := transient(out[0].err); busy {
			lastErr = fmt.Errorf("%w: %v", ErrConnection, out[0].err)
			if code == "READONLY" {
				s.fail() // a session to a replica: connect to the primary of now
			}
			c.topologyChanged(ctx, attempt)
			continue
		}
		return out, target{n, s}, nil
	}
}

// roundTrip builds the request's commands for this node and session and sends them (after
// ASKING when an ASK redirected them here).
func (c *Client) roundTrip(ctx context.Context, r request, n *node, s *Session, asking bool) ([]result, error) {
	cmds, err := r.build(n, s)
	if err != nil {
		return nil, err
	}
	if asking {
		cmds = append([][]string{{"ASKING"}}, cmds...)
	}
	out, err := s.pipeline(ctx, cmds...)
	if err != nil || !asking {
		return out, err
	}
	if out[0].err != nil {
		return out[1:], out[0].err
	}
	return out[1:], nil
}

// topologyChanged waits a little before a request is sent again, and in a Cluster asks
// go-redis to reload the slot map (the primary may have moved).
func (c *Client) topologyChanged(ctx context.Context, attempt int) {
	if attempt > 0 {
		sleep(ctx, 50*time.Millisecond)
	}
	c.router.changed(ctx)
}

// pipeline sends the commands in one round trip to the primary of the first one's key.
func (c *Client) pipeline(ctx context.Context, cmds ...[]string) ([]result, error) {
	out, _, err := c.pipelineAt(ctx, cmds...)
	return out, err
}

// pipelineAt is pipeline that also says which node and session carried the commands.
func (c *Client) pipelineAt(ctx context.Context, cmds ...[]string) ([]result, target, error) {
	return c.send(ctx, request{key: routeKey(cmds[0]),
		build: func(*node, *Session) ([][]string, error) { return cmds, nil }})
}

// do sends one command to the primary of its key.
func (c *Client) do(ctx context.Context, args ...string) (value, error) {
	vs, err := c.pipeline(ctx, args)
	if err != nil {
		return value{}, err
	}
	return vs[0].reply, vs[0].err
}

// routeKey is the key a command is routed by: the first key of ACQUIREALL / RELEASEALL (after
// numkeys), else the first argument ("" for a command without one).
func routeKey(cmd []string) string {
	switch strings.ToUpper(cmd[0]) {
	case "RLOCK.ACQUIREALL", "RLOCK.RELEASEALL":
		if len(cmd) > 2 {
			return cmd[2]
		}
	}
	if len(cmd) > 1 {
		return cmd[1]
	}
	return ""
}
