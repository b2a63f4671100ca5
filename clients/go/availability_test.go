package rlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// With the only replica stopped, no acquisition is reported held: an immediate grant and a
// grant by message each fail after about the confirmation timeout and leave nothing held.
func TestAcquisitionNotConfirmedByAStoppedReplicaIsUndone(t *testing.T) {
	tp := startTopology(t, "replicated")
	opts := testOptions{Addr: tp.state.Primary.addr(), Confirm: Confirm{Timeout: 300 * time.Millisecond}}
	adm := newTestClient(testOptions{Addr: tp.state.Primary.addr(), Confirm: Confirm{Mode: ConfirmOff}})
	defer adm.Close()
	stoppedReplica(t, tp, opts, adm, "confirmed", tp.state.Replicas[0].Port)
}

// stoppedReplica: a holder and a waiter by NOTIFY of another client, then the replica
// stopped: another owner's immediate acquisition is undone; the holder's release stands but
// says it was not confirmed; the waiter's grant by message, written by the holder's release
// on another connection, is undone (its RENEW propagates, so the WAIT after it counts it on
// every server: after a PING instead, Redis 8.2.3 and Valkey answer 1); nothing is left held.
func stoppedReplica(t *testing.T, tp *topology, opts testOptions, adm *Client, key string, replica int) {
	c, c2 := newTestClient(opts), newTestClient(opts)
	defer c.Close()
	defer c2.Close()
	// Valkey 9.1.2's replica leaves WAIT unanswered for ~0.5 s after it reports itself in
	// sync: wait until it confirms.
	eventually(t, "the replica confirming writes", func() bool {
		m := c.NewMutex("{" + key + "}:warm")
		err := m.TryLock()
		m.Unlock()
		return err == nil
	})
	holder, waiter, other := c.NewMutex(key), c2.NewMutex(key), c.NewMutex("{"+key+"}:2")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.LockContext(ctxFor(t, 30*time.Second)) }()
	eventually(t, "the waiter", func() bool { return waitersOf(adm, key) == 1 })
	tp.do(map[string]interface{}{"op": "pause", "port": replica})
	defer tp.do(map[string]interface{}{"op": "resume", "port": replica})
	start := time.Now()
	err := other.Lock()
	took := time.Since(start)
	var nc *NotConfirmedError
	if !errors.As(err, &nc) || !errors.Is(err, ErrNotConfirmed) || !nc.Undone || nc.Required != 1 {
		t.Fatalf("immediate grant: %v, want an undone NotConfirmedError", err)
	}
	t.Logf("%v after %v", err, took)
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("failed after %v, want about the 300 ms timeout", took)
	}
	if _, err := holder.Unlock(); !errors.As(err, &nc) || nc.Undone {
		t.Fatalf("release: %v, want a NotConfirmedError for a release that stands", err)
	}
	if err := <-got; !errors.As(err, &nc) || !nc.Undone {
		t.Fatalf("grant by message: %v, want an undone NotConfirmedError", err)
	}
	for _, k := range []string{key, "{" + key + "}:2"} {
		if owner := field(admin(t, adm, "RLOCK.INFO", k), "owner"); owner != nil {
			t.Fatalf("%s: the unconfirmed acquisition is still held by %v", k, owner)
		}
	}
}

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

// A holding the new primary lacks (deleted on a writable replica before the failover) is
// reported lost: the re-binding RENEW answers 0 there.
func TestSentinelFailoverReportsAHoldingTheNewPrimaryLacks(t *testing.T) {
	tp := startTopology(t, "sentinel")
	c := newTestClient(testOptions{SentinelAddrs: tp.sentinelAddrs(), MasterName: tp.state.MasterName})
	defer c.Close()
	lost := make(chan int64, 1)
	m := c.NewMutex("vanishing", WithOnLost(func(_ string, token int64) { lost <- token }))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	replica := nodeClient(t, tp.state.Replicas[0].addr())
	admin(t, replica, "CONFIG", "SET", "replica-read-only", "no")
	admin(t, replica, "DEL", "vanishing") // a local write: never propagated
	admin(t, replica, "CONFIG", "SET", "replica-read-only", "yes")
	tp.do(map[string]interface{}{"op": "failover"})
	select {
	case token := <-lost:
		if token != m.Token() {
			t.Fatalf("lost callback for token %d, want %d", token, m.Token())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the holding the new primary lacks was not reported lost")
	}
	if _, err := m.Unlock(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of the lost lock: %v", err)
	}
}

// Across a Sentinel failover (go-redis's failover client; before the kill rounds below, which
// leave the shared topology without a replica), the other types' holders re-bind
// on the new primary and their waiters, waiting by NOTIFY, queue there again and are served:
// a RWMutex reader behind a writer, a Semaphore waiter behind the holder of its one permit,
// and a CountDownLatch waiter until the count reaches 0.
func TestSentinelFailoverServesRWMutexSemaphoreAndLatchWaits(t *testing.T) {
	tp := startTopology(t, "sentinel")
	c := newTestClient(testOptions{SentinelAddrs: tp.sentinelAddrs(), MasterName: tp.state.MasterName})
	defer c.Close()
	ctx := ctxFor(t, 60*time.Second)
	writer := c.NewRWMutex("fo-rw")
	if err := writer.Lock(); err != nil {
		t.Fatal(err)
	}
	sem := c.NewSemaphore("fo-sem")
	if _, err := sem.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	latch := c.NewCountDownLatch("fo-latch")
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	reader, semWaiter := c.NewRWMutex("fo-rw"), c.NewSemaphore("fo-sem")
	got := map[string]chan error{"reader": make(chan error, 1), "permit": make(chan error, 1), "latch": make(chan error, 1)}
	go func() { got["reader"] <- reader.RLockContext(ctx) }()
	go func() { got["permit"] <- semWaiter.Acquire(ctx, 1) }()
	go func() { got["latch"] <- latch.Wait(ctx) }()
	queued := func() bool { return infoFieldOr(c, "rlock", "rlock_waiters") == 3 }
	eventually(t, "the three waits queued", queued)
	tp.do(map[string]interface{}{"op": "failover", "key": "fo-rw"})
	eventually(t, "the holders re-bound on the new primary", func() bool {
		rw, err := c.Do(ctx, "RWLOCK.INFO", "fo-rw")
		s, err2 := c.Do(ctx, "RSEM.INFO", "fo-sem")
		return err == nil && err2 == nil && field(rw, "mode") == "write" && field(s, "available") == int64(0)
	})
	eventually(t, "the waits queued on the new primary", queued)
	for name, ch := range got {
		select {
		case err := <-ch:
			t.Fatalf("%s returned before its turn: %v", name, err)
		default:
		}
	}
	select {
	case <-writer.Lost():
		t.Fatal("the writer lost its lock")
	case <-sem.Lost():
		t.Fatal("the semaphore holder lost its permit")
	default:
	}
	if err := writer.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got["reader"]; err != nil || reader.RToken() == 0 {
		t.Fatalf("reader: %v (token %d)", err, reader.RToken())
	}
	if err := sem.Release(1); err != nil {
		t.Fatal(err)
	}
	if err := <-got["permit"]; err != nil {
		t.Fatalf("semaphore waiter: %v", err)
	}
	if _, err := latch.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got["latch"]; err != nil {
		t.Fatalf("latch waiter: %v", err)
	}
	reader.RUnlock()
	semWaiter.Release(1)
}

// infoFieldOr reads one INFO field, -1 while the server is away.
func infoFieldOr(c *Client, section, name string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.Do(ctx, "INFO", section)
	if err != nil {
		return -1
	}
	text, _ := v.(string)
	for _, line := range strings.Split(text, "\r\n") {
		if value, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(value, 10, 64)
			return n
		}
	}
	return -1
}

// A confirmed holder, a waiter by NOTIFY and the fenced resource across SENTINEL FAILOVER,
// then across kill -9 of the new primary.
func TestSentinelFailoverKeepsTheConfirmedHolderAndServesTheWaiter(t *testing.T) {
	tp := startTopology(t, "sentinel")
	opts := testOptions{SentinelAddrs: tp.sentinelAddrs(), MasterName: tp.state.MasterName}
	failoverRounds(t, tp, opts, "leader", func() int { return tp.state.Primary.Port })
}

// failoverRounds: a holder and two waiters by NOTIFY (one of another client, one of the
// holder's) across a graceful failover, then across kill -9 of the new primary and the
// promotion of its replica. The holder re-binds on the new primary and still holds, the
// waiters queue there and are served after it with rising tokens, and the fenced resource
// never accepts two holders.
func failoverRounds(t *testing.T, tp *topology, opts testOptions, key string, primaryPort func() int) {
	c1, c2 := newTestClient(opts), newTestClient(opts)
	defer c1.Close()
	defer c2.Close()
	var f fence
	for round, op := range []string{"failover", "kill"} {
		holder := c1.NewMutex(key)
		if err := holder.Lock(); err != nil {
			t.Fatal(err)
		}
		if !f.write(holder.Token()) {
			t.Fatal("the fence refused the first holder")
		}
		waiters := []*Mutex{c2.NewMutex(key), c1.NewMutex(key)}
		got := make(chan *Mutex, len(waiters))
		for i, w := range waiters {
			go func(w *Mutex) {
				if err := w.LockContext(ctxFor(t, 60*time.Second)); err != nil {
					t.Errorf("round %d: waiter: %v", round, err)
				}
				got <- w
			}(w)
			want := int64(i + 1)
			eventually(t, "the waiter", func() bool { return waitersOf(c1, key) == want })
		}
		if op == "failover" {
			tp.do(map[string]interface{}{"op": "failover", "key": key})
		} else {
			tp.do(map[string]interface{}{"op": "kill", "port": primaryPort()})
			tp.do(map[string]interface{}{"op": "await_promotion", "key": key})
		}
		// The holder re-binds on the new primary and still holds; the waiters queue there.
		eventually(t, "the holder re-bound on the new primary", func() bool {
			v, err := c1.Do(ctxFor(t, 2*time.Second), "RLOCK.INFO", key)
			return err == nil && field(v, "owner") == holder.Value() && field(v, "watchdog") != nil
		})
		eventually(t, "the waiters queued on the new primary", func() bool { return waitersOf(c1, key) == 2 })
		select {
		case w := <-got:
			t.Fatalf("round %d: a waiter got the lock (token %d) while the holder holds it", round, w.Token())
		case <-holder.Lost():
			t.Fatalf("round %d: the confirmed holder lost its lock", round)
		default:
		}
		if _, err := holder.Unlock(); err != nil {
			t.Fatalf("round %d: unlock on the new primary: %v", round, err)
		}
		last := holder.Token()
		for range waiters {
			w := <-got
			if w.Token() <= last || !f.write(w.Token()) {
				t.Fatalf("round %d: waiter token %d after %d", round, w.Token(), last)
			}
			last = w.Token()
			if _, err := w.Unlock(); err != nil {
				t.Fatalf("round %d: waiter unlock: %v", round, err)
			}
		}
		if f.write(holder.Token()) {
			t.Fatalf("round %d: the fence accepted the first holder's token after its successors'", round)
		}
	}
}

// waitersOf is the number of waiters RLOCK.INFO reports (-1 while the server is away).
func waitersOf(c *Client, key string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.Do(ctx, "RLOCK.INFO", key)
	if err != nil {
		return -1
	}
	n, _ := field(v, "waiters").(int64)
	return n
}
