package main

// The Go worker: a client process that takes the lock through the Go helper's public API,
// writes its token to the guarded resource while it holds the lock, reads the resource, and
// releases, recording every step. One worker runs per client host, started by the test
// inside that host's namespace.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	rlock "github.com/rlock/rlock/clients/go"
)

// WorkerConfig is what the test tells every worker, Go or Python (the same flags).
type WorkerConfig struct {
	Process   int
	Out       string
	Sentinels []string
	Cluster   []string // host:port of cluster nodes, instead of Sentinels
	Resource  string
	Key       string
	Lock      string // rlock | setnx (the unfenced control: SET NX PX, as redsync does)
	Confirm   string // auto | off | <replica count>
	Lease     time.Duration
	Hold      time.Duration // the longest a holder sleeps inside its critical section
	Duration  time.Duration
}

func parseWorkerFlags(args []string) (WorkerConfig, error) {
	var c WorkerConfig
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.IntVar(&c.Process, "process", 0, "the process number in the history")
	fs.StringVar(&c.Out, "out", "", "the history file to append to")
	sentinels := fs.String("sentinels", "", "host:port,... of the sentinels")
	cluster := fs.String("cluster", "", "host:port,... of Redis Cluster nodes (instead of -sentinels)")
	fs.StringVar(&c.Resource, "resource", "", "host:port of the guarded resource")
	fs.StringVar(&c.Key, "key", "jepsen", "the lock's key")
	fs.StringVar(&c.Lock, "lock", "rlock", "rlock or setnx")
	fs.StringVar(&c.Confirm, "confirm", "auto", "auto, off or a replica count")
	fs.DurationVar(&c.Lease, "lease", 2*time.Second, "the lock's lease")
	fs.DurationVar(&c.Hold, "hold", 300*time.Millisecond, "the longest a holder sleeps while holding")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "how long to run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Out == "" || (*sentinels == "") == (*cluster == "") || c.Resource == "" {
		return c, errors.New("worker: -out, -resource and one of -sentinels or -cluster are required")
	}
	if *sentinels != "" {
		c.Sentinels = strings.Split(*sentinels, ",")
	} else {
		c.Cluster = strings.Split(*cluster, ",")
	}
	if c.Lock == "setnx" && len(c.Cluster) > 0 {
		return c, errors.New("worker: the setnx control runs on Sentinel only")
	}
	if c.Lock != "rlock" && c.Lock != "setnx" {
		return c, fmt.Errorf("worker: -lock must be rlock or setnx, not %q", c.Lock)
	}
	if _, err := confirmSetting(c.Confirm); err != nil {
		return c, err
	}
	return c, nil
}

func confirmSetting(s string) (rlock.Confirm, error) {
	switch s {
	case "auto":
		return rlock.Confirm{Mode: rlock.ConfirmAuto}, nil
	case "off":
		return rlock.Confirm{Mode: rlock.ConfirmOff}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return rlock.Confirm{}, fmt.Errorf("worker: -confirm must be auto, off or a replica count, not %q", s)
	}
	return rlock.Confirm{Mode: rlock.ConfirmReplicas, Replicas: n}, nil
}

// newLockClient is the one place the Go helper's client is made: over a go-redis Sentinel
// (failover) client or a go-redis ClusterClient, as a service would pass its own.
func newLockClient(c WorkerConfig) (*rlock.Client, func(), error) {
	cf, err := confirmSetting(c.Confirm)
	if err != nil {
		return nil, nil, err
	}
	// Reads wait 2 s: longer than a confirmation's WAIT (1 s), short enough to notice a partition.
	var rc redis.UniversalClient
	if len(c.Cluster) > 0 {
		rc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Cluster,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	} else {
		rc = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: masterName, SentinelAddrs: c.Sentinels,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	}
	lc, err := rlock.New(rc, rlock.WithConfirm(cf), rlock.WithTimeout(5*time.Second))
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return lc, func() { lc.Close(); rc.Close() }, nil
}

// The resource's token check, done by the resource itself (the storage Kleppmann's fencing
// argument puts it in): a write with a token lower than the highest accepted is refused.
const fencedWrite = `local max = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < max then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[1])
return 1`

// lockSession is one way to hold the lock (rlock's Mutex, or the SET NX control).
type lockSession interface {
	acquire(ctx context.Context) (token int64, leaseEnd int64, err error)
	release(ctx context.Context) error
}

// errNotGranted marks a definite refusal (the lock is held by someone else, or an
// acquisition the replicas did not confirm and that was undone).
var errNotGranted = errors.New("not granted")

type rlockSession struct{ m *rlock.Mutex }

func (s *rlockSession) acquire(ctx context.Context) (int64, int64, error) {
	err := s.m.LockContext(ctx)
	var nc *rlock.NotConfirmedError
	switch {
	case err == nil:
		return s.m.Token(), s.m.Until().UnixMilli(), nil
	case errors.Is(err, rlock.ErrFailed), errors.As(err, &nc), refusedByServer(err):
		return 0, 0, fmt.Errorf("%w: %v", errNotGranted, err)
	}
	return 0, 0, err
}

func (s *rlockSession) release(ctx context.Context) error {
	_, err := s.m.UnlockContext(ctx)
	if errors.Is(err, rlock.ErrNotHeld) {
		return fmt.Errorf("%w: %v", errNotGranted, err)
	}
	return err
}

// setnxSession is the control: a plain SET NX PX lock (no fencing token from the lock; the
// token written is a counter taken after the grant, so the history can still order holders).
type setnxSession struct {
	r       *redis.Client
	key     string
	owner   string
	lease   time.Duration
	counter string
}

const compareAndDelete = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

func (s *setnxSession) acquire(ctx context.Context) (int64, int64, error) {
	deadline := time.Now().Add(s.lease)
	for {
		ok, err := s.r.SetNX(ctx, s.key, s.owner, s.lease).Result()
		if err != nil {
			return 0, 0, err
		}
		if ok {
			token, err := s.r.Incr(ctx, s.counter).Result()
			return token, 0, err
		}
		if time.Now().After(deadline) {
			return 0, 0, errNotGranted
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *setnxSession) release(ctx context.Context) error {
	n, err := s.r.Eval(ctx, compareAndDelete, []string{s.key}, s.owner).Int()
	if err == nil && n == 0 {
		return errNotGranted
	}
	return err
}

func runGoWorker(args []string) error {
	c, err := parseWorkerFlags(args)
	if err != nil {
		return err
	}
	rec, err := NewRecorder(c.Out, c.Process)
	if err != nil {
		return err
	}
	defer rec.Close()
	res := redis.NewClient(&redis.Options{Addr: c.Resource, DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: -1})
	defer res.Close()

	var newSession func() lockSession
	switch c.Lock {
	case "rlock":
		lc, closeClient, err := newLockClient(c)
		if err != nil {
			return err
		}
		defer closeClient()
		onLost := rlock.WithOnLost(func(key string, token int64) {
			rec.Record(Event{Type: "note", F: "lost", Token: token})
		})
		// One Mutex per worker, a plain lease (the lease-lock model's clock), waits bounded.
		m := lc.NewMutex(c.Key, rlock.WithExpiry(c.Lease), rlock.WithWait(c.Lease), onLost)
		newSession = func() lockSession { return &rlockSession{m} }
	case "setnx":
		r := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: masterName, SentinelAddrs: c.Sentinels,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
		defer r.Close()
		owner := fmt.Sprintf("worker-%d-%d", c.Process, rand.Int63())
		newSession = func() lockSession {
			return &setnxSession{r: r, key: c.Key, owner: owner, lease: c.Lease, counter: c.Key + ":counter"}
		}
	}

	end := time.Now().Add(c.Duration)
	for session := 1; time.Now().Before(end); session++ {
		s := newSession()
		ev := func(e Event) Event { e.Session = session; return e }
		rec.Record(ev(Event{Type: "invoke", F: "acquire", LeaseMs: c.Lease.Milliseconds()}))
		ctx, cancel := context.WithTimeout(context.Background(), c.Lease+2*time.Second)
		token, leaseEnd, err := s.acquire(ctx)
		cancel()
		if err != nil {
			rec.Record(ev(Event{Type: outcome(err), F: "acquire", Error: err.Error()}))
			time.Sleep(time.Duration(rand.Int63n(int64(100 * time.Millisecond))))
			continue
		}
		rec.Record(ev(Event{Type: "ok", F: "acquire", Token: token, LeaseEnd: leaseEnd}))

		time.Sleep(time.Duration(rand.Int63n(int64(c.Hold) + 1)))
		for _, target := range []string{"fenced", "plain"} {
			rec.Record(ev(Event{Type: "invoke", F: "write", Target: target, Token: token}))
			accepted, err := writeResource(res, target, token)
			switch {
			case err != nil:
				rec.Record(ev(Event{Type: "info", F: "write", Target: target, Error: err.Error()}))
			case accepted:
				rec.Record(ev(Event{Type: "ok", F: "write", Target: target}))
			default:
				rec.Record(ev(Event{Type: "fail", F: "write", Target: target, Error: "refused: a higher token was accepted"}))
			}
		}
		for _, target := range []string{"fenced", "plain"} {
			rec.Record(ev(Event{Type: "invoke", F: "read", Target: target}))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			v, err := res.Get(ctx, target).Int64()
			cancel()
			switch {
			case errors.Is(err, redis.Nil):
				rec.Record(ev(Event{Type: "ok", F: "read", Target: target}))
			case err != nil:
				rec.Record(ev(Event{Type: "info", F: "read", Target: target, Error: err.Error()}))
			default:
				rec.Record(ev(Event{Type: "ok", F: "read", Target: target, Value: v}))
			}
		}

		rec.Record(ev(Event{Type: "invoke", F: "release"}))
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		err = s.release(ctx)
		cancel()
		if err != nil {
			rec.Record(ev(Event{Type: outcome(err), F: "release", Error: err.Error()}))
		} else {
			rec.Record(ev(Event{Type: "ok", F: "release"}))
		}
	}
	return nil
}

// refusedByServer: a primary without enough replicas (min-replicas-to-write) refuses every
// write before running it: nothing was taken.
func refusedByServer(err error) bool { return strings.Contains(err.Error(), "NOREPLICAS") }

// outcome is "fail" for a definite refusal, "info" for anything whose effect is unknown.
func outcome(err error) string {
	if errors.Is(err, errNotGranted) {
		return "fail"
	}
	return "info"
}

// writeResource writes the token to the fenced resource (through its token check) or to the
// plain one (a SET: what a resource that knows nothing of tokens does).
func writeResource(res *redis.Client, target string, token int64) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if target == "plain" {
		return true, res.Set(ctx, target, token, 0).Err()
	}
	n, err := res.Eval(ctx, fencedWrite, []string{target, target + ":max-token"}, token).Int()
	return n == 1, err
}
