package rlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Dispatcher is the subscriber of one node's session: a go-redis PubSub subscribed to its own
// __rlock__ channel (RLOCK.CHANNEL), which the waits name (NOTIFY <its client id>) and which
// carries their outcomes and the lost-lock notices; deliver routes each message. Its
// connection comes from a private go-redis client made with the node client's options (the
// same address or failover dialer, credentials, TLS), whose OnConnect learns the connection's
// CLIENT ID: go-redis gives a PubSub no other way to run it.
type Dispatcher struct {
	private *redis.Client
	pubsub  *redis.PubSub
	id      int64
	notify  []string      // what a wait names to be told by message: NOTIFY <id>, this subscriber
	failed  chan struct{} // closed when the subscriber's connection failed
	once    sync.Once
}

func newDispatcher(ctx context.Context, node *redis.Client, cmd *redis.Conn, deliver func(payload string)) (*Dispatcher, error) {
	ids := make(chan int64, 8)
	private := privateClient(node, func(ctx context.Context, cn *redis.Conn) error {
		id, err := cn.ClientID(ctx).Result()
		if err == nil {
			select {
			case ids <- id:
			default:
			}
		}
		return err
	})
	d := &Dispatcher{private: private, pubsub: private.Subscribe(ctx), failed: make(chan struct{})}
	fail := func(err error) (*Dispatcher, error) {
		d.close()
		return nil, fmt.Errorf("%w: the subscriber: %v", ErrConnection, err)
	}
	if err := d.pubsub.Ping(ctx); err != nil { // connects, and OnConnect learns its id
		return fail(err)
	}
	select {
	case d.id = <-ids:
	default:
		return fail(fmt.Errorf("no CLIENT ID"))
	}
	d.notify = []string{"NOTIFY", strconv.FormatInt(d.id, 10)}
	channel, err := cmd.Do(ctx, "RLOCK.CHANNEL", d.id).Text()
	if err != nil {
		d.close()
		return nil, fmt.Errorf("rlock: is the module loaded? RLOCK.CHANNEL: %w", err)
	}
	if err := d.pubsub.Subscribe(ctx, channel); err != nil {
		return fail(err)
	}
	for { // the Ping's answer and the subscription's
		m, err := d.pubsub.Receive(ctx)
		if err != nil {
			return fail(err)
		}
		if s, ok := m.(*redis.Subscription); ok && s.Channel == channel {
			break
		}
	}
	go d.run(deliver)
	return d, nil
}

// run hands every message to deliver until the connection fails; then it stops for good
// (the PubSub would reconnect under a new client id, to which the server sends nothing).
func (d *Dispatcher) run(deliver func(string)) {
	defer d.close()
	for {
		m, err := d.pubsub.Receive(context.Background())
		if err != nil {
			return
		}
		if msg, ok := m.(*redis.Message); ok {
			deliver(msg.Payload)
		}
	}
}

func (d *Dispatcher) ping(ctx context.Context) error { return d.pubsub.Ping(ctx) }

// close ends the subscriber: its waits leave the server's queues, and its NOTIFY grants end.
func (d *Dispatcher) close() {
	d.once.Do(func() {
		close(d.failed)
		d.pubsub.Close()
		d.private.Close()
	})
}

// cloneOptions copies a node client's options for a private client of rlock's own.
func cloneOptions(o *redis.Options) *redis.Options {
	opt := *o
	// A subscriber has no use for maintenance notifications (and go-redis refuses a second
	// client registering their handlers on options it shares).
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &opt
}

// privateClient is a go-redis client of rlock's own for one PubSub, made with the node
// client's options (address or failover dialer, credentials, TLS); onConnect runs on each of
// its connections after the user's OnConnect.
func privateClient(node *redis.Client, onConnect func(ctx context.Context, cn *redis.Conn) error) *redis.Client {
	opt := cloneOptions(node.Options())
	userOnConnect := opt.OnConnect
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if userOnConnect != nil {
			if err := userOnConnect(ctx, cn); err != nil {
				return err
			}
		}
		return onConnect(ctx, cn)
	}
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 1, 0, 1
	return redis.NewClient(opt)
}
