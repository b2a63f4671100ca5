package rlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Across a Sentinel failover (go-redis's failover client), the other types' holders re-bind
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
