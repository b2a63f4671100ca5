package rlock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	bin := serverBinary()
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "server.log")}
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", s.log, "--loadmodule", modulePath(t)}, args...)
	s.cmd = exec.Command(bin, all...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", s.readLog())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := s.raw("PING"); err == nil && reply == "+PONG" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer PING within 10 s:\n%s", s.readLog())
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

// raw sends one inline command on a fresh connection and returns the first reply line.
func (s *server) raw(cmd string) (string, error) {
	nc, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(nc, "%s\r\n", cmd)
	line, err := bufio.NewReader(nc).ReadString('\n')
	return strings.TrimSpace(line), err
}

func (s *server) client(t testing.TB, opts ...func(*Options)) *Client {
	o := Options{Addr: s.addr}
	for _, f := range opts {
		f(&o)
	}
	c := NewClient(o)
	t.Cleanup(func() { c.Close() })
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
