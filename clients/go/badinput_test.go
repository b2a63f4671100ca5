package rlock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every bad input is a clear error, not a panic, and changes nothing on the server.
func TestBadInputIsAnErrorAndChangesNothing(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := ctxFor(t, 10*time.Second)
	cases := []struct {
		name, want string
		call       func() error
	}{
		{"MultiLock(nil).Lock", "needs one key", func() error { return c.NewMultiLock(nil).Lock(ctx) }},
		{"MultiLock([]).TryLock", "needs one key", func() error { return c.NewMultiLock([]string{}).TryLock(ctx) }},
		{"MultiLock([]).Unlock", "needs one key", func() error { return c.NewMultiLock([]string{}).Unlock(ctx) }},
		{"WithExpiry(-1s)", "WithExpiry", func() error { return c.NewMutex("k", WithExpiry(-time.Second)).Lock() }},
		{"WithExpiry(0)", "WithExpiry", func() error { return c.NewMutex("k", WithExpiry(0)).TryLock() }},
		{"WithLease(-1s)", "WithLease", func() error { return c.NewMutex("k", WithLease(-time.Second)).Lock() }},
		{"WithWait(-1s)", "WithWait", func() error { return c.NewMutex("k", WithWait(-time.Second)).Lock() }},
		{"WithTries(0)", "WithTries", func() error { return c.NewMutex("k", WithTries(0)).Lock() }},
		{"WithRetryDelay(-1s)", "WithRetryDelay", func() error { return c.NewMutex("k", WithRetryDelay(-time.Second)).Lock() }},
		{"WithDriftFactor(2)", "WithDriftFactor", func() error { return c.NewMutex("k", WithDriftFactor(2)).Lock() }},
		{"WithValue(\"\")", "WithValue", func() error { return c.NewMutex("k", WithValue("")).Lock() }},
		{"WithGenValueFunc(error)", "WithGenValueFunc", func() error {
			return c.NewMutex("k", WithGenValueFunc(func() (string, error) { return "", errors.New("no entropy") })).Lock()
		}},
		{"WithMaxHold(-1s)", "WithMaxHold", func() error { return c.NewMutex("k", WithMaxHold(-time.Second)).Lock() }},
		{"RWMutex WithExpiry(-1s)", "WithExpiry", func() error { return c.NewRWMutex("k", WithExpiry(-time.Second)).RLock() }},
		{"Semaphore.Acquire(-1)", "1 permit or more", func() error { return c.NewSemaphore("k").Acquire(ctx, -1) }},
		{"Semaphore.Acquire(0)", "1 permit or more", func() error { return c.NewSemaphore("k").Acquire(ctx, 0) }},
		{"Semaphore.TryAcquireContext(-2)", "1 permit or more", func() error { return c.NewSemaphore("k").TryAcquireContext(ctx, -2) }},
		{"Semaphore.Release(-1)", "1 permit or more", func() error { return c.NewSemaphore("k").Release(-1) }},
		{"Mutex WithExpiry(-1s).Extend", "WithExpiry", func() error {
			_, err := c.NewMutex("k", WithExpiry(-time.Second)).Extend()
			return err
		}},
		{"Mutex WithExpiry(-1s).Unlock", "WithExpiry", func() error {
			_, err := c.NewMutex("k", WithExpiry(-time.Second)).Unlock()
			return err
		}},
		{"Election WithLease(-1s)", "WithLease", func() error { return c.NewElection("k", WithLease(-time.Second)).Campaign(ctx, "me") }},
		{"New(nil)", "got nil", func() error { _, err := New(nil); return err }},
		{"New(nil *redis.Client)", "nil *redis.Client", func() error { var rc *redis.Client; _, err := New(rc); return err }},
		{"New(Ring)", "Ring", func() error {
			ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": s.addr}})
			defer ring.Close()
			_, err := New(ring)
			return err
		}},
		{"New WithTimeout(0)", "WithTimeout", func() error {
			rdb := redis.NewClient(&redis.Options{Addr: s.addr})
			defer rdb.Close()
			_, err := New(rdb, WithTimeout(0))
			return err
		}},
		{"New WithConfirm(Replicas -1)", "WithConfirm", func() error {
			rdb := redis.NewClient(&redis.Options{Addr: s.addr})
			defer rdb.Close()
			_, err := New(rdb, WithConfirm(Confirm{Mode: ConfirmReplicas, Replicas: -1}))
			return err
		}},
	}
	calls := func() int64 { return infoField(t, c, "stats", "total_commands_processed") }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := calls()
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				return tc.call()
			}()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
			// Only the INFO that reads the count ran in between (and a PING, at most).
			if ran := calls() - before; ran > 2 {
				t.Fatalf("%d commands ran for a refused call", ran-1)
			}
		})
	}
	if keys := admin(t, c, "DBSIZE"); keys != int64(0) {
		t.Fatalf("bad input left %v keys", keys)
	}
}
