package rlock

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// topology runs clients/harness/topology.py as a child process: one JSON line describes the
// servers when they are ready, then one JSON command a line, one JSON answer each.
type topology struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	state topologyState
}

type endpoint struct {
	Host      string  `json:"host"`
	Port      int     `json:"port"`
	Role      string  `json:"role"`
	Alive     bool    `json:"alive"`
	ID        string  `json:"id"`
	PrimaryID string  `json:"primary_id"`
	Slots     [][]int `json:"slots"`
}

func (e endpoint) addr() string { return fmt.Sprintf("%s:%d", e.Host, e.Port) }

type topologyState struct {
	MasterName string     `json:"master_name"`
	Primary    endpoint   `json:"primary"`
	Replicas   []endpoint `json:"replicas"`
	Sentinels  []endpoint `json:"sentinels"`
	Nodes      []endpoint `json:"nodes"`
}

// shared holds one topology of each kind for the whole test run (each takes seconds to
// start): tests that use one leave it usable (every node alive but the ones they killed);
// TestMain tears them down.
var shared = map[string]*topology{}

// startTopology is the run's topology of this kind, started at the first test that asks.
func startTopology(t *testing.T, kind string) *topology {
	t.Helper()
	if testing.Short() {
		t.Skip("topologies are skipped with -short")
	}
	if tp := shared[kind]; tp != nil {
		tp.t = t
		tp.do(map[string]interface{}{"op": "describe"})
		return tp
	}
	cmd := exec.Command("python3", "../harness/topology.py", kind, "--module", modulePath(t))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tp := &topology{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := tp.out.ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &tp.state) != nil || len(tp.state.Nodes) == 0 {
		tp.stop()
		t.Fatalf("the %s topology did not start: %q %v", kind, line, err)
	}
	shared[kind] = tp
	return tp
}

// stop tears the servers down (EOF on the harness's stdin).
func (tp *topology) stop() {
	tp.in.Close()
	done := make(chan struct{})
	go func() { tp.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		tp.cmd.Process.Kill()
	}
}

func stopTopologies() {
	for _, tp := range shared {
		tp.stop()
	}
}

// do sends one command ({"op": ...}) and returns the topology it answers.
func (tp *topology) do(command map[string]interface{}) topologyState {
	tp.t.Helper()
	b, _ := json.Marshal(command)
	fmt.Fprintf(tp.in, "%s\n", b)
	line, err := tp.out.ReadString('\n')
	var answer struct {
		OK       bool          `json:"ok"`
		Error    string        `json:"error"`
		Topology topologyState `json:"topology"`
	}
	if err != nil || json.Unmarshal([]byte(line), &answer) != nil || !answer.OK {
		tp.t.Fatalf("topology %v: %q %v", command, line, err)
	}
	tp.state = answer.Topology
	return answer.Topology
}

func (tp *topology) sentinelAddrs() []string {
	var out []string
	for _, s := range tp.state.Sentinels {
		out = append(out, s.addr())
	}
	return out
}
