package rlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// server is one real redis-server with the module, on a free port in a temp dir.
type server struct {
	addr string
	cmd  *exec.Cmd
	log  string
}

func modulePath(t testing.TB) string {
	if p := os.Getenv("RLOCK_MODULE"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../../target/release/librlock.so")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the module is not built (%v): cargo build --release --lib", err)
	}
	return p
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startAttempts: a new free port when another process took the last one first (suites run
// side by side).
const startAttempts = 5

// errPortTaken: the server exited because another process holds its port (or bus port).
var errPortTaken = errors.New("held by another process")

func startServer(t testing.TB, args ...string) *server {
	return startServerPicking(t, func() int { return freePort(t) }, args...)
}

// startServerPicking starts on a port from pick, and on another one when it was taken.
func startServerPicking(t testing.TB, pick func() int, args ...string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := startServerOn(t, pick(), args...)
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatal(err)
		}
	}
}

// startServerOn starts a server on port and waits until it answers there. Ours is the one
// whose INFO names our child's pid: a suite running beside may have a server on the port too.
func startServerOn(t testing.TB, port int, args ...string) (*server, error) {
	t.Helper()
	dir := t.TempDir()
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "server.log")}
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", s.log, "--loadmodule", modulePath(t)}, args...)
	s.cmd = exec.Command(serverBinary(), all...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	stop := func() { s.cmd.Process.Kill(); <-exited }
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (port %d):\n%s", port, s.readLog())
		}
	})
	ours := fmt.Sprintf("process_id:%d", s.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if info, err := s.rawBulk("INFO server"); err == nil && strings.Contains(info+"\r\n", ours+"\r\n") {
			return s, nil
		}
		select {
		case <-exited:
			if strings.Contains(s.readLog(), "Address already in use") {
				return nil, fmt.Errorf("redis-server: port %d (or its bus port %d) %w:\n%s",
					port, port+10000, errPortTaken, s.readLog())
			}
			return nil, fmt.Errorf("redis-server on port %d exited:\n%s", port, s.readLog())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("redis-server on port %d did not start within 10 s:\n%s", port, s.readLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverBinary is the server under test: REDIS_SERVER, else redis-server.
func serverBinary() string {
	if bin := os.Getenv("REDIS_SERVER"); bin != "" {
		return bin
	}
	return "redis-server"
}

func (s *server) readLog() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// rawBulk sends one command on a fresh go-redis connection of its own and returns its text.
func (s *server) rawBulk(cmd string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return rdb.Do(ctx, cmdArgs(strings.Fields(cmd))...).Text()
}

func (s *server) client(t testing.TB, opts ...func(*testOptions)) *Client {
	o := testOptions{Addr: s.addr}
	for _, f := range opts {
		f(&o)
	}
	c := newTestClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// testOptions says how a test reaches its servers; newTestClient makes the go-redis client a
// service would have (plain, failover or cluster) and the rlock Client over it.
type testOptions struct {
	Addr               string
	Username, Password string
	TLSConfig          *tls.Config
	Protocol           int
	SentinelAddrs      []string
	MasterName         string
	ClusterAddrs       []string
	Confirm            Confirm
	Timeout            time.Duration
	// Tune, when set, adjusts the go-redis options (pool reaping in the pool tests).
	Tune func(*redis.UniversalOptions)
}

func newTestClient(o testOptions) *Client {
	// Maintenance notifications off: in go-redis v9.23's auto mode a connection's handshake on
	// Redis < 8 turns them off by writing the options, which a Conn (rlock's session) shares
	// with its client under a lock of its own: a data race of go-redis's that -race caught in
	// TestClusterHolderIsToldItLostTheLockAcrossKill (a make test run of 2026-12-07).
	uo := &redis.UniversalOptions{Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		Protocol: o.Protocol, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}}
	switch {
	case len(o.ClusterAddrs) > 0:
		uo.Addrs, uo.IsClusterMode = o.ClusterAddrs, true
	case o.MasterName != "":
		uo.Addrs, uo.MasterName = o.SentinelAddrs, o.MasterName
	default:
		uo.Addrs = []string{o.Addr}
	}
	if o.Tune != nil {
		o.Tune(uo)
	}
	rdb := redis.NewUniversalClient(uo)
	opts := []ClientOption{WithConfirm(o.Confirm)}
	if o.Timeout > 0 {
		opts = append(opts, WithTimeout(o.Timeout))
	}
	c, err := New(rdb, opts...)
	if err != nil {
		panic(err)
	}
	c.closeAlso = rdb
	return c
}

// admin runs a command as the test's own client (not the one under test) and fails the test
// on an error.
func admin(t testing.TB, c *Client, args ...string) interface{} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.Do(ctx, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// field reads one field of a map reply (RLOCK.INFO, RSEM.INFO) as returned by Do.
func field(v interface{}, name string) interface{} {
	list, _ := v.([]interface{})
	for i := 0; i+1 < len(list); i += 2 {
		if list[i] == name {
			return list[i+1]
		}
	}
	return nil
}

// infoField reads one field of INFO's text.
func infoField(t testing.TB, c *Client, section, name string) int64 {
	text, _ := admin(t, c, "INFO", section).(string)
	for _, line := range strings.Split(text, "\r\n") {
		if strings.HasPrefix(line, name+":") {
			n, _ := strconv.ParseInt(strings.TrimPrefix(line, name+":"), 10, 64)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, name)
	return 0
}

// eventually polls cond (server state) until it holds, failing after a generous deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waiters(t testing.TB, c *Client, key string) int64 {
	n, _ := field(admin(t, c, "RLOCK.INFO", key), "waiters").(int64)
	return n
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
