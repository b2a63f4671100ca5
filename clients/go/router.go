package rlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Router says which server serves a key, from the user's go-redis client: the one server of a
// *redis.Client (a plain one, or a failover client that asks its sentinels for the primary at
// each new connection), or the primary of the key's slot in a *redis.ClusterClient (go-redis
// keeps the slot map; rlock only asks it).
type Router struct {
	single  *redis.Client
	cluster *redis.ClusterClient
}

func newRouter(client redis.UniversalClient) (*Router, error) {
	switch c := client.(type) {
	case nil:
		return nil, errors.New("rlock: New needs a go-redis client, got nil")
	case *redis.Client:
		if c == nil {
			return nil, errors.New("rlock: New needs a go-redis client, got a nil *redis.Client")
		}
		return &Router{single: c}, nil
	case *redis.ClusterClient:
		if c == nil {
			return nil, errors.New("rlock: New needs a go-redis client, got a nil *redis.ClusterClient")
		}
		return &Router{cluster: c}, nil
	}
	return nil, fmt.Errorf("rlock: New takes a *redis.Client (plain or NewFailoverClient) or a *redis.ClusterClient, not a %T: a lock lives on one server (with its replicas), which a Ring's sharding does not give", client)
}

func (r *Router) isCluster() bool { return r.cluster != nil }

// nodeFor is the address (the session's name; "" for the one server of a *redis.Client) and the
// go-redis client of the primary that serves key, as far as go-redis knows now.
func (r *Router) nodeFor(ctx context.Context, key string) (string, *redis.Client, error) {
	if r.single != nil {
		return "", r.single, nil
	}
	nc, err := r.cluster.MasterForKey(ctx, key)
	if err != nil {
		return "", nil, fmt.Errorf("%w: no cluster node serves %q: %v", ErrConnection, key, err)
	}
	return nc.Options().Addr, nc, nil
}

// nodeAt is the client of the cluster primary at addr (where an ASK sends a command).
func (r *Router) nodeAt(ctx context.Context, addr string) (*redis.Client, error) {
	if r.cluster == nil {
		return r.single, nil
	}
	var found *redis.Client
	err := r.cluster.ForEachMaster(ctx, func(_ context.Context, nc *redis.Client) error {
		if nc.Options().Addr == addr {
			found = nc
		}
		return nil
	})
	if err == nil && found == nil {
		err = fmt.Errorf("%w: no cluster primary at %s", ErrConnection, addr)
	}
	return found, err
}

// changed tells go-redis that the slot map may be stale (a MOVED, a failover).
func (r *Router) changed(ctx context.Context) {
	if r.cluster != nil {
		r.cluster.ReloadState(ctx)
	}
}

// redirect reads a MOVED or ASK error reply from the node at asked: the address to go to.
func redirect(err error, asked string) (kind string, addr string) {
	if err == nil {
		return "", ""
	}
	var se *serverError
	if !errors.As(err, &se) {
		return "", ""
	}
	f := strings.Fields(se.msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", ""
	}
	addr = f[2]
	if strings.HasPrefix(addr, ":") { // an unknown endpoint: the host of the node asked
		host, _, _ := net.SplitHostPort(asked)
		addr = host + addr
	}
	return f[0], addr
}

// transient are the error replies of a topology change in progress: the command did nothing
// and is sent again, to the primary of now (READONLY: the server turned replica).
func transient(err error) (bool, string) {
	if err == nil {
		return false, ""
	}
	var se *serverError
	if !errors.As(err, &se) {
		return false, ""
	}
	switch code := se.code(); code {
	case "READONLY", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "UNBLOCKED":
		return true, code
	}
	return false, ""
}
