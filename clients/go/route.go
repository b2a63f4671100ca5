package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// cluster tells a Cluster client (Options.ClusterAddrs) from a one-primary one.
func (c *Client) cluster() bool { return len(c.opts.ClusterAddrs) > 0 }

// nodeFor is the node that serves key: the one primary, or in a Cluster the primary of the
// key's slot (the slot map is loaded at the first call).
func (c *Client) nodeFor(ctx context.Context, key string) (*node, error) {
	if !c.cluster() {
		return c.nodeAt(""), nil
	}
	slot := keySlot(key)
	addr := c.slots.get(slot)
	if addr == "" {
		if err := c.refreshSlots(ctx); err != nil {
			return nil, err
		}
		if addr = c.slots.get(slot); addr == "" {
			return nil, fmt.Errorf("%w: no cluster node serves slot %d", ErrConnection, slot)
		}
	}
	return c.nodeAt(addr), nil
}

// addrFor is the address of the primary that serves key now (asking the sentinels, or in a
// Cluster the nodes, again).
func (c *Client) addrFor(ctx context.Context, key string) (string, error) {
	if !c.cluster() {
		return c.primaryAddr(ctx)
	}
	if err := c.refreshSlots(ctx); err != nil {
		return "", err
	}
	n, err := c.nodeFor(ctx, key)
	if err != nil {
		return "", err
	}
	return n.addr, nil
}

// knownNode is the node key is served by as far as the client knows now (no round trip):
// where a holding granted now is bound.
func (c *Client) knownNode(key string) *node {
	if !c.cluster() {
		return c.nodeAt("")
	}
	return c.nodeAt(c.slots.get(keySlot(key)))
}

// request is one round trip to the primary of key: build makes the commands for the node and
// session they go to (a WAIT for that node's replicas, a NOTIFY naming that session).
type request struct {
	key   string
	extra time.Duration // how long the server may hold the first command
	once  bool          // never sent again after a connection failure (a write without ID)
	build func(n *node, s *session) ([][]string, error)
}

// target is where a request was answered: a wait's messages come on that session, and a
// confirmation goes on its connection.
type target struct {
	n *node
	s *session
}

// send sends the request in one round trip to the primary that serves its key and returns
// the replies (a server error stays with its command). It follows MOVED (patching the slot
// map, then refreshing it) and ASK (ASKING first), and sends again, unchanged, after a
// connection failure (once; in a Cluster or with Sentinel until Options.Timeout has passed,
// asking for the topology again) or a reply that says the topology is changing (READONLY,
// TRYAGAIN, CLUSTERDOWN ...). Every call that changes state carries an ID (or is idempotent),
// so a command sent twice never counts twice.
func (c *Client) send(ctx context.Context, r request) ([]result, target, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	var ask string
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 && (attempt >= 40 || time.Now().After(deadline) && attempt >= 2) {
			return nil, target{}, lastErr
		}
		n, err := c.nodeFor(ctx, r.key)
		if ask != "" {
			n, err = c.nodeAt(ask), nil
		}
		asking := ask != ""
		ask = ""
		var s *session
		var out []result
		if err == nil {
			s, err = c.session(ctx, n)
		}
		if err == nil {
			out, err = c.roundTrip(ctx, r, n, s, asking)
		}
		if ctx.Err() != nil {
			return nil, target{}, ctx.Err()
		}
		if err != nil {
			if !errors.Is(err, ErrConnection) || r.once && s != nil || !c.cluster() && c.opts.MasterName == "" && attempt >= 1 {
				return nil, target{}, err
			}
			lastErr = err
			c.topologyChanged(ctx, attempt)
			continue
		}
		if kind, slot, addr := redirect(out[0].err, n.addr); kind != "" && c.cluster() {
			lastErr = out[0].err
			if kind == "ASK" {
				ask = addr
			} else {
				c.slots.moved(slot, addr)
				go c.refreshSlots(context.Background())
			}
			continue
		}
		if busy, code := transient(out[0].err); busy {
			lastErr = fmt.Errorf("%w: %v", ErrConnection, out[0].err)
			if code == "READONLY" {
				s.close(ErrConnection) // a session to a replica: connect to the primary of now
			}
			c.topologyChanged(ctx, attempt)
			continue
		}
		return out, target{n, s}, nil
	}
}

// roundTrip builds the request's commands for this node and session and sends them (after
// ASKING when an ASK redirected them here).
func (c *Client) roundTrip(ctx context.Context, r request, n *node, s *session, asking bool) ([]result, error) {
	cmds, err := r.build(n, s)
	if err != nil {
		return nil, err
	}
	if asking {
		cmds = append([][]string{{"ASKING"}}, cmds...)
	}
	out, err := s.pipeline(ctx, r.extra, cmds...)
	if err != nil || !asking {
		return out, err
	}
	if out[0].err != nil {
		return out[1:], out[0].err
	}
	return out[1:], nil
}

// topologyChanged waits a little before a request is sent again, and in a Cluster asks for
// the slot map again (the primary may have moved).
func (c *Client) topologyChanged(ctx context.Context, attempt int) {
	if attempt > 0 {
		sleep(ctx, 50*time.Millisecond)
	}
	if c.cluster() {
		c.refreshSlots(ctx)
	}
}

// pipeline sends the commands in one round trip to the primary of the first one's key.
func (c *Client) pipeline(ctx context.Context, extra time.Duration, cmds ...[]string) ([]result, error) {
	out, _, err := c.send(ctx, request{key: routeKey(cmds[0]), extra: extra,
		build: func(*node, *session) ([][]string, error) { return cmds, nil }})
	return out, err
}

// do sends one command to the primary of its key.
func (c *Client) do(ctx context.Context, args ...string) (value, error) {
	vs, err := c.pipeline(ctx, 0, args)
	if err != nil {
		return value{}, err
	}
	return vs[0].reply, vs[0].err
}
