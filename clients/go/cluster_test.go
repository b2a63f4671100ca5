package rlock

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The cluster tests share one Cluster (3 primaries with a replica each), in this order: the
// last ones kill primaries.

func clusterClient(t *testing.T, tp *topology, cf Confirm) *Client {
	c := newTestClient(testOptions{ClusterAddrs: tp.seeds(), Confirm: cf})
	t.Cleanup(func() { c.Close() })
	return c
}

// seeds are the addresses of the nodes alive now.
func (tp *topology) seeds() []string {
	var out []string
	for _, n := range tp.state.Nodes {
		if n.Alive {
			out = append(out, n.addr())
		}
	}
	return out
}

// nodeClient talks to one node as a plain server (no routing): the test's admin.
func nodeClient(t *testing.T, addr string) *Client {
	c := newTestClient(testOptions{Addr: addr, Confirm: Confirm{Mode: ConfirmOff}})
	t.Cleanup(func() { c.Close() })
	return c
}

// keySlot is the key's slot, as a node of the cluster says (CLUSTER KEYSLOT).
func keySlot(t *testing.T, tp *topology, key string) int {
	t.Helper()
	slot, _ := admin(t, nodeClient(t, tp.seeds()[0]), "CLUSTER", "KEYSLOT", key).(int64)
	return int(slot)
}

// primaryOf is the primary that serves key, and its replica (TestClusterServesEveryType
// checks the hash against the server's CLUSTER KEYSLOT).
func primaryOf(t *testing.T, tp *topology, key string) (primary, replica endpoint) {
	t.Helper()
	slot := keySlot(t, tp, key)
	for _, n := range tp.state.Nodes {
		for _, r := range n.Slots {
			if n.Role == "primary" && r[0] <= slot && slot <= r[1] {
				primary = n
			}
		}
	}
	for _, n := range tp.state.Nodes {
		if n.Role == "replica" && n.PrimaryID == primary.ID {
			replica = n
		}
	}
	if primary.Port == 0 {
		t.Fatalf("no primary serves %q", key)
	}
	return primary, replica
}

// keysOnEachPrimary are three keys, one served by each primary (the first of k0, k1 ... on
// each).
func keysOnEachPrimary(t *testing.T, tp *topology) []string {
	seen := map[int]bool{}
	var keys []string
	for i := 0; len(keys) < 3 && i < 100; i++ {
		key := fmt.Sprintf("k%d", i)
		if p, _ := primaryOf(t, tp, key); !seen[p.Port] {
			seen[p.Port] = true
			keys = append(keys, key)
		}
	}
	return keys
}

func TestClusterServesEveryTypeOnEveryPrimary(t *testing.T) {
	tp := startTopology(t, "cluster")
	c := clusterClient(t, tp, Confirm{})
	ctx := ctxFor(t, 30*time.Second)
	for _, k := range keysOnEachPrimary(t, tp) {
		p, _ := primaryOf(t, tp, k)
		node := nodeClient(t, p.addr())
		waiting := func(n int64) func() bool {
			return func() bool { return infoField(t, node, "rlock", "rlock_waiters") == n }
		}
		holder, waiter := c.NewMutex(k), c.NewMutex(k)
		if err := holder.Lock(); err != nil {
			t.Fatalf("%s on port %d: %v", k, p.Port, err)
		}
		got := make(chan error, 1)
		go func() { got <- waiter.LockContext(ctx) }()
		eventually(t, "the mutex waiter", waiting(1))
		holder.Unlock()
		if err := <-got; err != nil || waiter.Token() <= holder.Token() {
			t.Fatalf("%s: waiter %v, token %d after %d", k, err, waiter.Token(), holder.Token())
		}
		waiter.Unlock()

		reader, writer := c.NewRWMutex("{"+k+"}:rw"), c.NewRWMutex("{"+k+"}:rw")
		reader.RLock()
		go func() { got <- writer.LockContext(ctx) }()
		eventually(t, "the writer", waiting(1))
		reader.RUnlock()
		if err := <-got; err != nil || writer.Token() == 0 {
			t.Fatalf("%s: writer %v", k, err)
		}
		writer.Unlock()

		a, b := c.NewSemaphore("{"+k+"}:sem"), c.NewSemaphore("{"+k+"}:sem")
		a.TrySetPermits(ctx, 1)
		a.Acquire(ctx, 1)
		go func() { got <- b.Acquire(ctx, 1) }()
		eventually(t, "the semaphore waiter", waiting(1))
		a.Release(1)
		if err := <-got; err != nil {
			t.Fatalf("%s: semaphore waiter %v", k, err)
		}
		b.Release(1)

		latch := c.NewCountDownLatch("{" + k + "}:latch")
		latch.TrySetCount(ctx, 1)
		go func() { got <- latch.Wait(ctx) }()
		eventually(t, "the latch waiter", waiting(1))
		latch.CountDown(ctx)
		if err := <-got; err != nil {
			t.Fatalf("%s: latch %v", k, err)
		}

		e := c.NewElection("{" + k + "}:election")
		if err := e.Campaign(ctx, "node-"+k); err != nil {
			t.Fatal(err)
		}
		if l, err := e.Leader(ctx); err != nil || l.Candidate != "node-"+k || l.Term != e.Term() {
			t.Fatalf("%s: leader %+v %v", k, l, err)
		}
		e.Resign(ctx)
	}

	m := c.NewMultiLock([]string{"{acct}:1", "{acct}:2"})
	if err := m.Lock(ctx); err != nil || m.Tokens()[1] == 0 {
		t.Fatalf("MultiLock with a hash tag: %v %v", err, m.Tokens())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	keys := keysOnEachPrimary(t, tp)
	for _, try := range []func() error{
		func() error { return c.NewMultiLock(keys).TryLock(ctx) },
		func() error { return c.NewMultiLock(keys).Lock(ctx) },
	} {
		err := try()
		var cs *CrossSlotError
		if !errors.Is(err, ErrCrossSlot) || !errors.As(err, &cs) || !strings.Contains(err.Error(), "hash tag") {
			t.Fatalf("MultiLock across slots: %v, want a CrossSlotError naming hash tags", err)
		}
	}
}

// A slot migrating from one primary to another: the lock is taken through ASK on the new
// one, and released through MOVED once the slot moved.
func TestClusterFollowsASKWhileASlotMigratesAndMOVEDAfter(t *testing.T) {
	tp := startTopology(t, "cluster")
	c := clusterClient(t, tp, Confirm{})
	key := "migrating" // a slot no other test uses: a slot moves only once it holds no key
	source, _ := primaryOf(t, tp, key)
	var dest endpoint
	for _, n := range tp.state.Nodes {
		if n.Role == "primary" && n.Port != source.Port {
			dest = n
		}
	}
	slot := itoa(int64(keySlot(t, tp, key)))
	m := c.NewMutex(key)
	if err := m.Lock(); err != nil { // the slot map is loaded: the key goes to source
		t.Fatal(err)
	}
	m.Unlock()
	to, from := nodeClient(t, dest.addr()), nodeClient(t, source.addr())
	migrate(t, slot, from, to, dest.ID, source.ID, func() {})
	if err := m.Lock(); err != nil {
		t.Fatalf("lock while the slot migrates (ASK): %v", err)
	}
	admin(t, to, "ASKING") // the next command on this connection may read the importing slot
	if owner := field(admin(t, to, "RLOCK.INFO", key), "owner"); owner != m.Value() {
		t.Fatalf("the lock taken during the migration is held on the new primary by %v", owner)
	}
	for _, n := range []*Client{to, from} {
		admin(t, n, "CLUSTER", "SETSLOT", slot, "NODE", dest.ID)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("unlock after the slot moved (MOVED): %v %v", ok, err)
	}
	if other := c.NewMutex(key); other.TryLock() != nil {
		t.Fatal("the lock is still held after Unlock")
	} else {
		other.Unlock()
	}
	// The slot goes back (the harness expects the three primaries' ranges whole).
	migrate(t, slot, to, from, source.ID, dest.ID, func() {
		for _, n := range []*Client{from, to} {
			admin(t, n, "CLUSTER", "SETSLOT", slot, "NODE", source.ID)
		}
	})
}

// migrate marks slot as migrating from one primary to the other (importing there), then runs
// finish.
func migrate(t *testing.T, slot string, from, to *Client, toID, fromID string, finish func()) {
	admin(t, to, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	admin(t, from, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	finish()
}

func TestClusterAcquisitionNotConfirmedByAStoppedReplicaIsUndone(t *testing.T) {
	tp := startTopology(t, "cluster")
	key := keysOnEachPrimary(t, tp)[1]
	_, replica := primaryOf(t, tp, key)
	opts := testOptions{ClusterAddrs: tp.seeds(), Confirm: Confirm{Timeout: 300 * time.Millisecond}}
	stoppedReplica(t, tp, opts, clusterClient(t, tp, Confirm{Mode: ConfirmOff}), key, replica.Port)
}

// A holder, two waiters and the fence across CLUSTER FAILOVER, then kill -9 of the new
// primary and the promotion of its replica.
func TestClusterFailoverKeepsTheConfirmedHolderAndServesTheWaiters(t *testing.T) {
	tp := startTopology(t, "cluster")
	key := keysOnEachPrimary(t, tp)[0]
	opts := testOptions{ClusterAddrs: tp.seeds()}
	failoverRounds(t, tp, opts, key, func() int {
		p, _ := primaryOf(t, tp, key)
		return p.Port
	})
}

// A watchdog holder whose primary is killed before its replica is promoted: the lease ends
// unrenewed, the holder is told it lost the lock, another client takes it on the new primary
// with a higher token, and the fence refuses the old holder.
func TestClusterHolderIsToldItLostTheLockAcrossKill(t *testing.T) {
	tp := startTopology(t, "cluster")
	var key string
	for _, k := range keysOnEachPrimary(t, tp) {
		if _, replica := primaryOf(t, tp, k); replica.Port != 0 {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no primary with a replica left")
	}
	c1, c2 := clusterClient(t, tp, Confirm{}), clusterClient(t, tp, Confirm{})
	holder := c1.NewMutex(key, WithLease(500*time.Millisecond))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	var f fence
	f.write(holder.Token())
	p, _ := primaryOf(t, tp, key)
	tp.do(map[string]interface{}{"op": "kill", "port": p.Port})
	select {
	case <-holder.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told that its lock was lost")
	}
	tp.do(map[string]interface{}{"op": "await_promotion", "key": key})
	waiter := c2.NewMutex(key)
	if err := waiter.LockContext(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if waiter.Token() <= holder.Token() || !f.write(waiter.Token()) || f.write(holder.Token()) {
		t.Fatalf("tokens: the new holder's %d after the lost one's %d", waiter.Token(), holder.Token())
	}
	if _, err := holder.Unlock(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of the lost lock: %v", err)
	}
}
