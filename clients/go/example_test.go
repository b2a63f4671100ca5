package rlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A service written for redsync switches by changing its import and its constructor.
func Example_redsyncSwitch() {
	client := redis.NewClient(&redis.Options{Addr: redisAddr()}) // the service's own client
	defer client.Close()
	rs, err := New(client) // was: redsync.New(goredis.NewPool(client))
	if err != nil {
		panic(err)
	}
	defer rs.Close()
	mutex := rs.NewMutex("order:42", WithExpiry(8*time.Second))
	if err := mutex.Lock(); err != nil {
		panic(err)
	}
	fmt.Println("locked; the lease ends by", time.Until(mutex.Until()) <= 8*time.Second)
	if ok, err := mutex.Unlock(); ok && err == nil {
		fmt.Println("unlocked")
	}
	// Output:
	// locked; the lease ends by true
	// unlocked
}

// By default a Mutex lives as long as rlock's connection (the server's watchdog): no expiry to
// pick, no Extend goroutine. Its fencing token only grows.
func ExampleMutex_LockContext() {
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	defer client.Close()
	rs, _ := New(client)
	defer rs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := rs.NewMutex("ship:7")
	first.LockContext(ctx)
	t1 := first.Token()
	first.Unlock()
	second := rs.NewMutex("ship:7")
	second.LockContext(ctx)
	defer second.Unlock()
	fmt.Println("the next holder's token is higher:", second.Token() > t1)
	// Output: the next holder's token is higher: true
}

// A wait whose context ends returns exactly ctx.Err(), and leaves the server's queue.
func ExampleMutex_LockContext_deadline() {
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	defer client.Close()
	rs, _ := New(client)
	defer rs.Close()
	holder := rs.NewMutex("report")
	holder.Lock()
	defer holder.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := rs.NewMutex("report").LockContext(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrFailed))
	// Output: true false
}

// A semaphore of 2 permits: a third Acquire waits; TryAcquire says no at once.
func ExampleSemaphore() {
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	defer client.Close()
	rs, _ := New(client)
	defer rs.Close()
	ctx := context.Background()
	gpus := rs.NewSemaphore("gpus")
	gpus.TrySetPermits(ctx, 2)
	gpus.Acquire(ctx, 2)
	fmt.Println(rs.NewSemaphore("gpus").TryAcquire(1))
	gpus.Release(2)
	fmt.Println(rs.NewSemaphore("gpus").TryAcquire(1))
	// Output:
	// false
	// true
}

// exampleServer is the server the examples talk to, started by TestMain.
var exampleServer string

// redisAddr is the address of a redis-server with the rlock module loaded.
func redisAddr() string { return exampleServer }

// mainTB lets TestMain start the examples' server with the tests' fixture.
type mainTB struct {
	testing.TB
	cleanups []func()
	failed   error
}

func (m *mainTB) Helper() {}
func (m *mainTB) TempDir() string {
	d, _ := os.MkdirTemp("", "rlock-go-example-")
	m.Cleanup(func() { os.RemoveAll(d) })
	return d
}
func (m *mainTB) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) Failed() bool     { return m.failed != nil }
func (m *mainTB) Logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (m *mainTB) Fatal(args ...interface{})                 { panic(fmt.Sprint(args...)) }
func (m *mainTB) Fatalf(format string, args ...interface{}) { panic(fmt.Sprintf(format, args...)) }

func (m *mainTB) close() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
}
