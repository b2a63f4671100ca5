package rlock

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Confirm.Warn: with the replica stopped the acquisition is reported held, and the shortfall
// is logged.
func TestConfirmWarnLogsAndKeepsTheAcquisition(t *testing.T) {
	tp := startTopology(t, "replicated")
	logged := make(chan string, 10)
	c := newTestClient(testOptions{Addr: tp.state.Primary.addr(), Confirm: Confirm{Timeout: 300 * time.Millisecond, Warn: true,
		Logger: func(format string, args ...interface{}) { logged <- fmt.Sprintf(format, args...) }}})
	defer c.Close()
	eventually(t, "the replica confirming writes", func() bool {
		err := c.NewMutex("warm").TryLock()
		return err == nil && len(logged) == 0
	})
	replica := tp.state.Replicas[0].Port
	tp.do(map[string]interface{}{"op": "pause", "port": replica})
	defer tp.do(map[string]interface{}{"op": "resume", "port": replica})
	m := c.NewMutex("warned")
	if err := m.Lock(); err != nil || m.Token() == 0 {
		t.Fatalf("Warn: %v, want the lock held", err)
	}
	if line := <-logged; !strings.Contains(line, "confirmed by 0 of 1 replicas") {
		t.Fatalf("logged %q", line)
	}
	if owner := field(admin(t, c, "RLOCK.INFO", "warned"), "owner"); owner != m.Value() {
		t.Fatalf("owner %v, want the warned holder", owner)
	}
}

// ConfirmAOF waits for the primary's AOF (WAITAOF) where the server has it, and says what it
// needs where it has not (Redis 7.0).
func TestConfirmAOF(t *testing.T) {
	s := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	c := s.client(t, func(o *testOptions) { o.Confirm = Confirm{Mode: ConfirmAOF} })
	hasWaitAOF := admin(t, c, "COMMAND", "INFO", "WAITAOF").([]interface{})[0] != nil
	m := c.NewMutex("aof")
	err := m.Lock()
	switch {
	case hasWaitAOF && err != nil:
		t.Fatalf("ConfirmAOF on a server with WAITAOF: %v", err)
	case !hasWaitAOF && (err == nil || !strings.Contains(err.Error(), "WAITAOF (Redis 7.2 or newer)")):
		t.Fatalf("ConfirmAOF without WAITAOF: %v, want the error naming WAITAOF", err)
	}
	t.Logf("WAITAOF: %v, Lock: %v", hasWaitAOF, err)
	if !hasWaitAOF {
		return
	}
	// One replica's AOF is required and there is none: not confirmed, undone.
	strict := s.client(t, func(o *testOptions) {
		o.Confirm = Confirm{Mode: ConfirmAOF, Replicas: 1, Timeout: 100 * time.Millisecond}
	})
	var nc *NotConfirmedError
	if err := strict.NewMutex("aof2").Lock(); !errors.As(err, &nc) || !nc.Undone || nc.Required != 1 {
		t.Fatalf("ConfirmAOF with a replica required and none: %v", err)
	}
	if owner := field(admin(t, c, "RLOCK.INFO", "aof2"), "owner"); owner != nil {
		t.Fatalf("the unconfirmed acquisition is held by %v", owner)
	}
}
