package rlock

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// With the only replica stopped, an acquisition is not reported held: it fails after about
// the confirmation timeout and leaves nothing held.
func TestAcquisitionNotConfirmedByAStoppedReplicaIsUndone(t *testing.T) {
	tp := startTopology(t, "replicated")
	c := NewClient(Options{Addr: tp.state.Primary.addr(), Confirm: Confirm{Timeout: 300 * time.Millisecond}})
	defer c.Close()
	admin := NewClient(Options{Addr: tp.state.Primary.addr(), Confirm: Confirm{Mode: ConfirmOff}})
	defer admin.Close()
	m := c.NewMutex("confirmed")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	replica := tp.state.Replicas[0].Port
	tp.do(map[string]interface{}{"op": "pause", "port": replica})
	defer tp.do(map[string]interface{}{"op": "resume", "port": replica})
	start := time.Now()
	err := m.Lock()
	took := time.Since(start)
	var nc *NotConfirmedError
	if !errors.Is(err, ErrNotConfirmed) || !errors.As(err, &nc) || !nc.Undone || nc.Required != 1 {
		t.Fatalf("got %v, want an undone NotConfirmedError", err)
	}
	t.Logf("%v after %v", err, took)
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("failed after %v, want about the 300 ms timeout", took)
	}
	if info := field(adminDo(t, admin, "RLOCK.INFO", "confirmed"), "owner"); info != nil {
		t.Fatalf("the unconfirmed acquisition is still held by %v", info)
	}
}

func adminDo(t *testing.T, c *Client, args ...string) interface{} { return admin(t, c, args...) }

// fence is a resource that refuses a token lower than the highest it saw.
type fence struct {
	mu      sync.Mutex
	highest int64
}

func (f *fence) write(token int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.highest {
		return false
	}
	f.highest = token
	return true
}

// A confirmed holder, a waiter by NOTIFY and the fenced resource across SENTINEL FAILOVER,
// then across kill -9 of the new primary.
func TestSentinelFailoverKeepsTheConfirmedHolderAndServesTheWaiter(t *testing.T) {
	tp := startTopology(t, "sentinel")
	opts := Options{SentinelAddrs: tp.sentinelAddrs(), MasterName: tp.state.MasterName}
	c1, c2 := NewClient(opts), NewClient(opts)
	defer c1.Close()
	defer c2.Close()
	var f fence
	for round, op := range []string{"failover", "kill"} {
		holder := c1.NewMutex("leader")
		if err := holder.Lock(); err != nil {
			t.Fatal(err)
		}
		if !f.write(holder.Token()) {
			t.Fatal("the fence refused the first holder")
		}
		waiter := c2.NewMutex("leader")
		got := make(chan error, 1)
		go func() { got <- waiter.LockContext(ctxFor(t, 30*time.Second)) }()
		eventually(t, "the waiter", func() bool { return waiters(t, c1, "leader") == 1 })
		if op == "failover" {
			tp.do(map[string]interface{}{"op": "failover"})
		} else {
			tp.do(map[string]interface{}{"op": "kill", "port": tp.state.Primary.Port})
			tp.do(map[string]interface{}{"op": "await_promotion"})
		}
		// The holder re-binds on the new primary and still holds; the waiter queues there.
		eventually(t, "the holder re-bound on the new primary", func() bool {
			v, err := c1.Do(ctxFor(t, 2*time.Second), "RLOCK.INFO", "leader")
			return err == nil && field(v, "owner") == holder.Value() && field(v, "watchdog") != nil
		})
		eventually(t, "the waiter queued on the new primary", func() bool {
			v, err := c1.Do(ctxFor(t, 2*time.Second), "RLOCK.INFO", "leader")
			return err == nil && field(v, "waiters") == int64(1)
		})
		select {
		case err := <-got:
			t.Fatalf("round %d: the waiter got the lock while the holder holds it: %v", round, err)
		case <-holder.Lost():
			t.Fatalf("round %d: the confirmed holder lost its lock", round)
		default:
		}
		if _, err := holder.Unlock(); err != nil {
			t.Fatalf("round %d: unlock on the new primary: %v", round, err)
		}
		if err := <-got; err != nil {
			t.Fatalf("round %d: waiter: %v", round, err)
		}
		if waiter.Token() <= holder.Token() || !f.write(waiter.Token()) {
			t.Fatalf("round %d: waiter token %d after %d", round, waiter.Token(), holder.Token())
		}
		waiter.Unlock()
	}
}
