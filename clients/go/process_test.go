package rlock

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the holder process of the crash tests: with RLOCK_GO_HOLDER set, this
// test binary takes what it names, prints "held <token>" and waits to be killed.
func TestMain(m *testing.M) {
	if spec := os.Getenv("RLOCK_GO_HOLDER"); spec != "" {
		hold(strings.Fields(spec))
		return
	}
	tb := &mainTB{}
	exampleServer = startServer(tb).addr
	code := m.Run()
	tb.close()
	stopTopologies()
	os.Exit(code)
}

func hold(spec []string) {
	addr, what, key := spec[0], spec[1], spec[2]
	c := newTestClient(testOptions{Addr: addr})
	ctx := context.Background()
	var token int64
	var err error
	switch what {
	case "lock":
		m := c.NewMutex(key)
		err, token = m.Lock(), m.Token()
	case "leader":
		e := c.NewElection(key)
		err = e.Campaign(ctx, spec[3])
		token = e.Term()
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("held", token)
	select {}
}

// holder is a child process holding a lock until killed.
type holder struct {
	cmd   *exec.Cmd
	token int64
}

func startHolder(t *testing.T, args ...string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RLOCK_GO_HOLDER="+strings.Join(args, " "))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		h := &holder{cmd: cmd}
		if _, err := fmt.Sscanf(line, "held %d", &h.token); err != nil {
			t.Fatalf("holder process said %q", line)
		}
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("the holder process did not take the lock within 10 s")
	}
	return nil
}

func (h *holder) kill9() { h.cmd.Process.Signal(syscall.SIGKILL) }

func TestKilledHolderProcessHandsTheLockToTheNextWaiter(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	h := startHolder(t, s.addr, "lock", "crash")
	m := c.NewMutex("crash")
	got := make(chan time.Time, 1)
	go func() {
		if err := m.LockContext(ctxFor(t, 10*time.Second)); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	eventually(t, "the waiter", func() bool { return waiters(t, c, "crash") == 1 })
	killed := time.Now()
	h.kill9()
	select {
	case at := <-got:
		t.Logf("the waiter held the lock %v after kill -9 of the holder", at.Sub(killed))
		if at.Sub(killed) > 2*time.Second {
			t.Fatalf("handed over after %v", at.Sub(killed))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was never granted the dead holder's lock")
	}
	if m.Token() <= h.token {
		t.Fatalf("token %d after the dead holder's %d", m.Token(), h.token)
	}
}

func TestElectionObserversSeeTheLeaderCrashAndTheSuccessor(t *testing.T) {
	s := startServer(t, "--notify-keyspace-events", "Kdgx")
	c := s.client(t)
	leader := startHolder(t, s.addr, "leader", "election:sched", "10.0.0.1:80")
	e := c.NewElection("election:sched")
	ctx := ctxFor(t, 20*time.Second)
	other := s.client(t) // a second observer, on a client of its own
	observers := []<-chan LeaderInfo{e.Observe(ctx), other.NewElection("election:sched").Observe(ctx)}
	for _, seen := range observers {
		if first := <-seen; first.Candidate != "10.0.0.1:80" || first.Term != leader.token {
			t.Fatalf("first observed %+v", first)
		}
	}
	campaigned := make(chan error, 1)
	go func() { campaigned <- e.Campaign(ctx, "10.0.0.2:80") }()
	eventually(t, "the second candidate", func() bool { return waiters(t, c, "election:sched") == 1 })
	leader.kill9()
	if err := <-campaigned; err != nil {
		t.Fatal(err)
	}
	for i, seen := range observers {
		for now := range seen {
			if now.Candidate == "" {
				continue // the moment nobody led
			}
			if now.Candidate != "10.0.0.2:80" || now.Term != e.Term() || now.Term <= leader.token {
				t.Fatalf("observer %d saw %+v, want the successor with term %d", i, now, e.Term())
			}
			break
		}
	}
	if l, err := e.Leader(ctx); err != nil || l.Candidate != "10.0.0.2:80" {
		t.Fatalf("Leader: %+v %v", l, err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Leader(ctx); err != ErrNoLeader {
		t.Fatalf("Leader after resigning: %v", err)
	}
}
