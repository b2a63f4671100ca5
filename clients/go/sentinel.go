package rlock

import (
	"context"
	"fmt"
	"net"
)

// primaryAddr is the address to connect to: Options.Addr, or with Sentinel the primary the
// first sentinel that answers names.
func (c *Client) primaryAddr(ctx context.Context) (string, error) {
	if c.opts.MasterName == "" {
		return c.opts.Addr, nil
	}
	var errs []error
	for _, addr := range c.opts.SentinelAddrs {
		o := c.dialOptions(addr)
		o.username, o.password, o.db = c.opts.SentinelUsername, c.opts.SentinelPassword, 0
		s, err := dial(ctx, o, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reply, err := s.do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", c.opts.MasterName)
		s.close(errClientClosed)
		if err == nil && len(reply.elems) == 2 {
			return net.JoinHostPort(reply.elems[0].str, reply.elems[1].str), nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v", addr, err))
	}
	return "", fmt.Errorf("%w: no sentinel named the primary %q: %v", ErrConnection, c.opts.MasterName, errs)
}

// checkPrimary refuses a server that is not (or no longer) a primary: during a failover a
// sentinel can name the old one for a moment, and an observer's server can turn replica.
func checkPrimary(ctx context.Context, cn *conn) error {
	role, err := cn.do(ctx, "ROLE")
	if err != nil {
		return err
	}
	if len(role.elems) == 0 || role.elems[0].str != "master" {
		return fmt.Errorf("%w: the server is not a primary", ErrConnection)
	}
	return nil
}
