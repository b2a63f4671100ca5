package main

// One run: a fresh network and servers, the workers started in their client namespaces, one
// fault played while they work, everything healed, then the history checked.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Client hosts and the language of the worker each runs. c1 and c2 stay with the first
// primary when a partition cuts it off; c3 and c4 go with the majority.
// lockKey is the one lock every worker takes.
const lockKey = "jepsen"

var clientHosts = []struct{ host, lang string }{{"c1", "go"}, {"c2", "python"}, {"c3", "go"}, {"c4", "python"}}

var hostIPs = map[string]string{"n1": "10.77.0.11", "n2": "10.77.0.12", "n3": "10.77.0.13",
	"n4": "10.77.0.14", "n5": "10.77.0.15", "n6": "10.77.0.16", "res": "10.77.0.20",
	"c1": "10.77.0.101", "c2": "10.77.0.102", "c3": "10.77.0.103", "c4": "10.77.0.104"}

// Env is what every run needs from the machine.
type Env struct {
	Module string // librlock.so
	Python string // a Python with redis-py and clients/python installed
	Self   string // this binary (the Go worker is its "worker" subcommand)
	Script string // worker.py
	// ClockShift is clockshift.so (built from clockshift.c), preloaded into the data nodes
	// of the faults that move a clock.
	ClockShift string
}

// Run is one scenario being played.
type Run struct {
	Scenario Scenario
	Dir      string
	Net      *Network
	Srv      *Servers
	Log      io.Writer
	workers  map[string]*exec.Cmd // by client host
	files    map[string]string    // history file by client host
	start    time.Time
	faultLog []string
	events   *EventLog
}

// Summary is what a run wrote to summary.json.
type Summary struct {
	Scenario      string `json:"scenario"`
	Config        string `json:"config"`
	Fault         string `json:"fault"`
	Operations    int    `json:"operations"`
	Indeterminate int    `json:"indeterminate"`
	Grants        int    `json:"grants"`
	Lost          int    `json:"lost_notices"`
	// ServerEvents counts the lock key's keyspace events the data nodes published
	// (rlock.acquired, rlock.released, expired: a lease that ended on the server's clock).
	ServerEvents map[string]int `json:"server_events"`
	Checks       []CheckResult  `json:"checks"`
	Verdict      string         `json:"verdict"` // as expected | UNEXPECTED: ...
	Seconds      float64        `json:"seconds"`
	FaultLog     []string       `json:"fault_log"`
}

func (r *Run) note(format string, args ...interface{}) {
	line := fmt.Sprintf("%6.1fs ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...)
	fmt.Fprintf(r.Log, "  %s\n", line)
	r.faultLog = append(r.faultLog, line)
}

// PlayScenario runs sc end to end under dir/<name> and returns its summary.
func PlayScenario(env Env, sc Scenario, root string, duration time.Duration, log io.Writer) (sum Summary, err error) {
	r := &Run{Scenario: sc, Dir: filepath.Join(root, sc.Name()), Log: log, workers: map[string]*exec.Cmd{},
		files: map[string]string{}, start: time.Now()}
	sum = Summary{Scenario: sc.Name(), Config: sc.Config.Name, Fault: sc.Fault.Name}
	_ = os.RemoveAll(r.Dir)
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return sum, err
	}
	fmt.Fprintf(log, "== %s: %s under %s\n", sc.Name(), sc.Config.Describe(), sc.Fault.Description)
	if r.Net, err = NewNetwork(); err != nil {
		return sum, err
	}
	cleanup := func() {
		for _, w := range r.workers {
			if w.Process != nil {
				_ = syscall.Kill(w.Process.Pid, syscall.SIGCONT)
				_ = w.Process.Kill()
			}
		}
		if r.events != nil {
			r.events.Stop()
		}
		if r.Srv != nil {
			r.Srv.Stop()
		}
		time.Sleep(200 * time.Millisecond) // the killed processes leave their namespaces
		r.Net.Close()
	}
	defer cleanup()
	stopSignals := cleanupOnSignal(cleanup)
	defer stopSignals()
	for _, h := range append(append([]string{}, dataNodes(sc.Config.Cluster)...), "res", "c1", "c2", "c3", "c4") {
		if err := r.Net.AddHost(h, hostIPs[h]); err != nil {
			return sum, err
		}
	}
	replTimeout := sc.Fault.ReplTimeout
	if replTimeout == 0 {
		replTimeout = 60 * time.Second
	}
	r.Srv, err = StartServers(r.Net, r.Dir, env.Module, ServerSettings{ReplTimeout: replTimeout,
		ClockShift: clockShift(env, sc.Fault), MinReplicas: sc.Config.MinReplicas,
		Cluster: sc.Config.Cluster, ClusterKey: lockKey})
	if err != nil {
		return sum, err
	}
	if sc.Config.Cluster {
		r.note("servers ready: a Cluster, n1 n2 n3 primaries (n1 has the key's slot), n4 n5 n6 their replicas")
	} else {
		r.note("servers ready: n1 primary, n2 and n3 replicas, a sentinel on each")
	}
	if r.events, err = StartEventLog(r.Srv, filepath.Join(r.Dir, "server-events.jsonl"), lockKey); err != nil {
		return sum, err
	}
	if err := r.startWorkers(env, duration); err != nil {
		return sum, err
	}
	faultErr := make(chan error, 1)
	go func() {
		time.Sleep(sc.Fault.After)
		faultErr <- sc.Fault.Play(r)
	}()
	for h, w := range r.workers {
		if err := w.Wait(); err != nil && !r.killedOnPurpose(h) {
			r.note("worker %s ended: %v", h, err)
		}
	}
	if err := <-faultErr; err != nil {
		return sum, fmt.Errorf("the fault %s: %w", sc.Fault.Name, err)
	}
	_ = r.Net.Heal()
	for _, p := range r.Srv.Nodes {
		_ = p.Signal(syscall.SIGCONT)
	}
	primary, err := r.Srv.AwaitSettled(60 * time.Second)
	if err != nil {
		return sum, err
	}
	r.note("healed; the servers agree on %s as primary", primary)
	info, _ := r.Srv.Cli(r.Srv.Nodes[primary], "RLOCK.INFO", lockKey)
	r.note("RLOCK.INFO %s on %s: %s", lockKey, primary, strings.Join(strings.Fields(info), " "))
	sum.ServerEvents = r.events.Stop()
	r.events = nil
	return r.check(sum)
}

func clockShift(env Env, f Fault) string {
	if f.ClockJump {
		return env.ClockShift
	}
	return ""
}

func (r *Run) killedOnPurpose(host string) bool {
	for _, l := range r.faultLog {
		if strings.Contains(l, "SIGKILL worker "+host) {
			return true
		}
	}
	return false
}

func (r *Run) startWorkers(env Env, duration time.Duration) error {
	cfg := r.Scenario.Config
	// The workers find the servers through the sentinels, or in a Cluster through its nodes.
	servers := []string{"-sentinels"}
	var addrs []string
	for _, h := range r.Srv.Hosts {
		if cfg.Cluster {
			addrs = append(addrs, hostIPs[h]+":"+redisPort)
		} else {
			addrs = append(addrs, hostIPs[h]+":"+sentinelPort)
		}
	}
	if cfg.Cluster {
		servers[0] = "-cluster"
	}
	servers = append(servers, strings.Join(addrs, ","))
	for i, c := range clientHosts {
		lang := c.lang
		if cfg.Lock == "setnx" {
			lang = "go" // the control is one redsync-style lock; the Go worker has it
		}
		out := filepath.Join(r.Dir, "history-"+c.host+".jsonl")
		r.files[c.host] = out
		args := append([]string{"-process", fmt.Sprint(i), "-out", out, "-key", lockKey}, servers...)
		args = append(args, "-resource", hostIPs["res"]+":"+redisPort, "-lock", cfg.Lock, "-confirm", cfg.Confirm,
			"-lease", cfg.Lease.String(), "-hold", cfg.Hold.String(),
			"-duration", duration.String())
		var argv []string
		if lang == "go" {
			argv = append([]string{env.Self, "worker"}, args...)
		} else {
			argv = append([]string{env.Python, env.Script}, args...)
		}
		log, err := os.Create(filepath.Join(r.Dir, "worker-"+c.host+".log"))
		if err != nil {
			return err
		}
		cmd := r.Net.Command(c.host, argv...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		r.workers[c.host] = cmd
	}
	r.note("4 workers started (%s)", cfg.Describe())
	return nil
}

// holdingWorker waits (up to timeout) for a worker whose last recorded event says it holds
// the lock, and returns its host.
func (r *Run) holdingWorker(timeout time.Duration, among ...string) (string, error) {
	var found string
	err := poll(timeout, "a worker holding the lock", func() bool {
		for _, c := range clientHosts {
			if len(among) > 0 && !contains(among, c.host) {
				continue
			}
			data, err := os.ReadFile(r.files[c.host])
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			var e Event
			if json.Unmarshal([]byte(lines[len(lines)-1]), &e) == nil && e.F == "acquire" && e.Type == "ok" {
				found = c.host
				return true
			}
		}
		return false
	})
	return found, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *Run) check(sum Summary) (Summary, error) {
	var paths []string
	for _, c := range clientHosts {
		paths = append(paths, r.files[c.host])
	}
	sum.Seconds = time.Since(r.start).Seconds()
	sum.FaultLog = r.faultLog
	return checkRun(r.Scenario, r.Dir, paths, sum, r.Log)
}

// checkRun checks the histories of one run and writes its summary.json.
func checkRun(sc Scenario, dir string, paths []string, sum Summary, log io.Writer) (Summary, error) {
	events, err := ReadHistory(paths)
	if err != nil {
		return sum, err
	}
	ops, notes, err := Pair(events)
	if err != nil {
		return sum, err
	}
	for _, o := range ops {
		if o.Outcome == "info" {
			sum.Indeterminate++
		}
		if o.F == "acquire" && o.Outcome == "ok" {
			sum.Grants++
		}
	}
	sum.Operations, sum.Lost = len(ops), len(notes)
	fmt.Fprintf(log, "  history: %d operations (%d grants, %d indeterminate), %d lost-lock notices; server events %v\n",
		len(ops), sum.Grants, sum.Indeterminate, len(notes), sum.ServerEvents)
	sum.Checks = Check(ops, LoadReports(dir, notes), dir, 60*time.Second, indent{log})
	sum.Verdict = sc.Verdict(sum.Checks)
	fmt.Fprintf(log, "  verdict: %s (%.0f s)\n", sum.Verdict, sum.Seconds)
	data, _ := json.MarshalIndent(sum, "", "  ")
	return sum, os.WriteFile(filepath.Join(dir, "summary.json"), data, 0o644)
}

type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	_, err := i.w.Write([]byte("  " + strings.ReplaceAll(strings.TrimRight(string(p), "\n"), "\n", "\n  ") + "\n"))
	return len(p), err
}
