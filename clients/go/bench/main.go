// Command bench is `make bench-pairs`'s Go pair: rlock's Mutex beside redsync v4 over
// go-redis v9, on one redis-server with the module that it starts, in the same run with rounds
// interleaved (the side that goes first alternates). Workloads:
//
//   - uncontended: one goroutine, acquire then release as fast as it can (pairs/s, and the
//     process's CPU time per pair);
//   - parallel16: 16 goroutines, each on a key of its own (pairs/s, all together);
//   - hot16: 16 contenders on one lock, acquire then release at once in a loop (acquires/s,
//     p99 and longest wait, the most and fewest acquisitions of one contender); a wait still
//     unfinished when the round ends counts with its time so far;
//   - handoff: a holder releases while one waiter waits: the time from the release to the
//     waiter holding (median of the round).
//
// redsync runs with its defaults (8 s expiry, retry delay rand(50, 250) ms) and tries enough
// never to give up within a round; rlock with its defaults (the server's watchdog, FIFO
// queue, waiting by NOTIFY). Prints each figure's median and range and writes every round's
// figures to target/bench-go.json (benches/pairs.py sets the pair side by side).
//
// Environment: BENCH_REPS (5), BENCH_ROUND_MS (2000), BENCH_CONTENDERS (16), RLOCK_MODULE,
// BENCH_CPUPROFILE (a file: the run's CPU profile, for go tool pprof), BENCH_WORKLOADS
// (uncontended: that one alone). `go test -bench UncontendedPair -benchmem` (pair_test.go)
// gives the allocations per pair of each side.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	rlock "github.com/rlock/rlock/clients/go"
)

var (
	reps       = envInt("BENCH_REPS", 5)
	round      = time.Duration(envInt("BENCH_ROUND_MS", 2000)) * time.Millisecond
	contenders = envInt("BENCH_CONTENDERS", 16)
	// uncontendedOnly: BENCH_WORKLOADS=uncontended runs that workload alone (a before/after
	// comparison of the uncontended path in rounds of a few seconds).
	uncontendedOnly = os.Getenv("BENCH_WORKLOADS") == "uncontended"
)

func envInt(name string, otherwise int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return otherwise
}

// locker is one side's lock on one key, made anew for each key.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

type side struct {
	name string
	make func(key string) locker
}

type rlockMutex struct{ m *rlock.Mutex }

func (l rlockMutex) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l rlockMutex) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

type redsyncMutex struct{ m *redsync.Mutex }

func (l redsyncMutex) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l redsyncMutex) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

// newSides is both sides over one go-redis client: rlock's Mutex with its defaults, and
// redsync's with its defaults and tries enough never to give up within a round.
func newSides(rdb *redis.Client) ([]side, func()) {
	rl, err := rlock.New(rdb)
	if err != nil {
		fail(err)
	}
	rs := redsync.New(goredis.NewPool(rdb))
	return []side{
		{"rlock", func(key string) locker { return rlockMutex{rl.NewMutex(key)} }},
		{"redsync", func(key string) locker { return redsyncMutex{rs.NewMutex(key, redsync.WithTries(math.MaxInt32))} }},
	}, func() { rl.Close() }
}

func main() {
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" { // go tool pprof -top <binary> <path>
		f, err := os.Create(path)
		if err != nil {
			fail(err)
		}
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	root, _ := filepath.Abs("../../..")
	addr, stop := startServer(moduleFile())
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4 * contenders})
	defer rdb.Close()
	sides, closeSides := newSides(rdb)
	defer closeSides()
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	for rep := 0; rep < reps; rep++ {
		order := sides
		if rep%2 == 1 {
			order = []side{sides[1], sides[0]}
		}
		for _, s := range order {
			prefix := "go.mutex." + s.name
			key := fmt.Sprintf("bench:%s:%d", s.name, rep)
			rate, cpu := pairsPerSecond(s, []string{key + ":u"})
			add(prefix+".uncontended.pairs_per_s", rate)
			add(prefix+".uncontended.cpu_us_per_pair", cpu)
			if uncontendedOnly {
				continue
			}
			keys := make([]string, contenders)
			for i := range keys {
				keys[i] = fmt.Sprintf("%s:p%d", key, i)
			}
			rate, _ = pairsPerSecond(s, keys)
			add(prefix+fmt.Sprintf(".parallel%d.pairs_per_s", contenders), rate)
			for figure, v := range hotLock(s, key+":h") {
				add(prefix+fmt.Sprintf(".hot%d.", contenders)+figure, v)
			}
			add(prefix+".handoff.median_ms", handoff(s, key+":o"))
		}
	}
	info, _ := rdb.Info(context.Background(), "server").Result()
	meta := map[string]interface{}{
		"redis_server": firstLine(info, "redis_version:"), "go_version": runtime.Version(),
		"reps": reps, "round_ms": round.Milliseconds(), "contenders": contenders,
		"rlock_side": "Mutex with defaults (watchdog, NOTIFY wait)", "redsync_side": "redsync v4 over go-redis v9, defaults, WithTries(MaxInt32)",
	}
	out := filepath.Join(root, "target", "bench-go.json")
	os.MkdirAll(filepath.Dir(out), 0o755)
	body, _ := json.MarshalIndent(map[string]interface{}{"meta": meta, "figures": jsonSafe(figures)}, "", " ")
	body = bytes.ReplaceAll(body, []byte(`"`+nanMark+`"`), []byte("NaN"))
	if err := os.WriteFile(out, append(body, '\n'), 0o644); err != nil {
		fail(err)
	}
	names := make([]string, 0, len(figures))
	for name := range figures {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Printf("%-52s %12s   [min .. max] over %d rounds\n", "figure", "median", reps)
	for _, name := range names {
		v := figures[name]
		fmt.Printf("%-52s %12.1f   [%.1f .. %.1f]\n", name, median(v), minOf(v), maxOf(v))
	}
	fmt.Println("wrote", out)
}

// pairsPerSecond runs one goroutine per key, each acquiring and releasing its key's lock as
// fast as it can for a round: the pairs of all of them per second, and the process's CPU time
// per pair in µs (every thread, the server's not: what a loaded machine changes least).
func pairsPerSecond(s side, keys []string) (float64, float64) {
	ctx := context.Background()
	var total atomic.Int64
	var wg sync.WaitGroup
	locks := make([]locker, len(keys))
	for i, key := range keys {
		locks[i] = s.make(key)
		must(locks[i].Lock(ctx)) // before the clock and the CPU count: connections set up by then
		must(locks[i].Unlock(ctx))
	}
	start, cpu := time.Now(), processCPU()
	end := start.Add(round)
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for time.Now().Before(end) {
				must(l.Lock(ctx))
				must(l.Unlock(ctx))
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	pairs := float64(total.Load())
	return pairs / time.Since(start).Seconds(), float64((processCPU() - cpu).Microseconds()) / pairs
}

// processCPU is the CPU time (user and system) of this process, every thread: not the
// server's, which is a child.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hotLock has contenders lock one key in a loop for a round.
func hotLock(s side, key string) map[string]float64 {
	ctx := context.Background()
	locks := make([]locker, contenders)
	for i := range locks {
		locks[i] = s.make(key)
		must(locks[i].Lock(ctx))
		must(locks[i].Unlock(ctx))
	}
	var mu sync.Mutex
	var waits []time.Duration
	counts := make([]int, contenders)
	pending := make([]time.Time, contenders)
	var running atomic.Bool
	running.Store(true)
	var wg sync.WaitGroup
	start := time.Now()
	for i, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for running.Load() {
				asked := time.Now()
				mu.Lock()
				pending[i] = asked
				mu.Unlock()
				must(l.Lock(ctx))
				mu.Lock()
				pending[i] = time.Time{}
				if running.Load() {
					waits = append(waits, time.Since(asked))
					counts[i]++
				}
				mu.Unlock()
				must(l.Unlock(ctx))
			}
		}()
	}
	time.Sleep(round)
	running.Store(false)
	end := time.Now()
	mu.Lock()
	every := append([]time.Duration(nil), waits...)
	unfinished := 0
	for _, asked := range pending {
		if !asked.IsZero() {
			every = append(every, end.Sub(asked))
			unfinished++
		}
	}
	mu.Unlock()
	wg.Wait()
	sort.Slice(every, func(i, j int) bool { return every[i] < every[j] })
	most, fewest := counts[0], counts[0]
	for _, n := range counts {
		most, fewest = max(most, n), min(fewest, n)
	}
	out := map[string]float64{
		"acquires_per_s":    float64(len(waits)) / end.Sub(start).Seconds(),
		"max_per_contender": float64(most), "min_per_contender": float64(fewest),
		"unfinished_waits": float64(unfinished),
		"p99_ms":           math.NaN(), "max_wait_ms": math.NaN(),
	}
	if len(every) > 0 {
		p99 := int(math.Ceil(0.99*float64(len(every)))) - 1
		out["p99_ms"] = ms(every[max(0, p99)])
		out["max_wait_ms"] = ms(every[len(every)-1])
	}
	return out
}

// handoff measures, for a round, the time from a holder's release to its one waiter holding.
func handoff(s side, key string) float64 {
	ctx := context.Background()
	holder, waiter := s.make(key), s.make(key)
	var times []float64
	end := time.Now().Add(round)
	for time.Now().Before(end) || len(times) == 0 {
		must(holder.Lock(ctx))
		got := make(chan time.Time, 1)
		asked := make(chan struct{})
		go func() {
			close(asked)
			must(waiter.Lock(ctx))
			got <- time.Now()
		}()
		<-asked
		time.Sleep(20 * time.Millisecond) // the waiter is waiting (queued, or between polls)
		released := time.Now()
		must(holder.Unlock(ctx))
		times = append(times, ms((<-got).Sub(released)))
		must(waiter.Unlock(ctx))
	}
	return median(times)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// nanMark stands for a figure without a value (no wait in a round) until it is written as NaN,
// which Go's JSON encoder refuses and Python's json (benches/pairs.py) reads.
const nanMark = "rlock-bench-NaN"

func jsonSafe(figures map[string][]float64) map[string][]interface{} {
	out := map[string][]interface{}{}
	for name, values := range figures {
		for _, v := range values {
			var x interface{} = v
			if math.IsNaN(v) || math.IsInf(v, 0) {
				x = nanMark
			}
			out[name] = append(out[name], x)
		}
	}
	return out
}

func firstLine(text, prefix string) string {
	for i := 0; i+len(prefix) <= len(text); i++ {
		if text[i:i+len(prefix)] == prefix {
			j := i + len(prefix)
			for j < len(text) && text[j] != '\r' && text[j] != '\n' {
				j++
			}
			return text[i+len(prefix) : j]
		}
	}
	return ""
}

// moduleFile is RLOCK_MODULE, or the module that `make build` makes.
func moduleFile() string {
	if module := os.Getenv("RLOCK_MODULE"); module != "" {
		return module
	}
	root, _ := filepath.Abs("../../..")
	return filepath.Join(root, "target", "release", "librlock.so")
}

// startServer starts redis-server with the module on a free port in a temp dir.
func startServer(module string) (string, func()) {
	dir, err := os.MkdirTemp("", "rlock-go-bench-")
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--loadmodule", module)
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer probe.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := probe.Info(context.Background(), "server").Result()
		if err == nil && firstLine(info, "process_id:") == strconv.Itoa(cmd.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			fail(fmt.Errorf("redis-server on %s did not answer as pid %d: %v", addr, cmd.Process.Pid, err))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
