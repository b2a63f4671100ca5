package rlock

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

// The test servers are never mistaken for another suite's: a port another process took between
// the free-port pick and the bind gets a new one, or (a port given) a clear failure, and a
// foreign server answering PING on the port is never taken for ours.

func portOf(s *server) int {
	_, port, _ := net.SplitHostPort(s.addr)
	var n int
	fmt.Sscan(port, &n)
	return n
}

// answersAsItself: the server on s's port is s's own process.
func answersAsItself(t *testing.T, s *server) {
	t.Helper()
	info, err := s.rawBulk("INFO server")
	if err != nil || !strings.Contains(info, fmt.Sprintf("process_id:%d\r\n", s.cmd.Process.Pid)) {
		t.Fatalf("%s does not answer as pid %d: %v %q", s.addr, s.cmd.Process.Pid, err, info)
	}
}

func TestFixtureMovesOffAPortAnotherServerHolds(t *testing.T) {
	foreign := startServer(t)
	picks := []int{portOf(foreign)}
	ours := startServerPicking(t, func() int {
		if len(picks) > 0 {
			port := picks[0]
			picks = picks[1:]
			return port
		}
		return freePort(t)
	})
	if ours.addr == foreign.addr {
		t.Fatalf("ours reported ready on the foreign server's %s", foreign.addr)
	}
	answersAsItself(t, ours)
	answersAsItself(t, foreign)
}

func TestFixtureOnAGivenPortAnotherServerHoldsFailsClearly(t *testing.T) {
	foreign := startServer(t)
	port := portOf(foreign)
	_, err := startServerOn(t, port)
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), fmt.Sprintf("port %d ", port)) {
		t.Fatalf("want a clear port-taken error, got %v", err)
	}
	answersAsItself(t, foreign)
}

func TestFixtureClusterNodeWhoseBusPortIsTakenFailsClearly(t *testing.T) {
	var port int
	var bus net.Listener
	for bus == nil {
		if port = freePort(t); port+10000 <= 65535 {
			bus, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		}
	}
	defer bus.Close()
	_, err := startServerOn(t, port, "--cluster-enabled", "yes")
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), fmt.Sprintf("bus port %d", port+10000)) {
		t.Fatalf("want a clear bus-port-taken error, got %v", err)
	}
}
