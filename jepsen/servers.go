package main

// The processes of one run inside the namespaces: three data nodes (n1 the first primary,
// n2 and n3 its replicas), a sentinel beside each, and the guarded resource (a plain
// redis-server on its own host that no fault touches: the storage a fencing token protects).
// They are administered over their own namespace's loopback with redis-cli, so a partition
// never hides them from the test itself.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	masterName   = "rlock"
	redisPort    = "6379"
	sentinelPort = "26379"
)

// DataNodes are the hosts that run a redis-server with the module and a sentinel.
var DataNodes = []string{"n1", "n2", "n3"}

// ClusterNodes are the hosts of the Cluster topology: n1, n2, n3 the first primaries, n4, n5,
// n6 their replicas (no sentinel).
var ClusterNodes = []string{"n1", "n2", "n3", "n4", "n5", "n6"}

// dataNodes are the hosts running a redis-server with the module in a topology.
func dataNodes(cluster bool) []string {
	if cluster {
		return ClusterNodes
	}
	return DataNodes
}

// Proc is one server process, known by its pid ("ip netns exec" execs into the server).
type Proc struct {
	Host, Port string
	cmd        *exec.Cmd
	dir        string
	args       []string
	env        []string
	logPath    string
}

// Servers is every server process of a run.
type Servers struct {
	net       *Network
	dir       string
	module    string
	Nodes     map[string]*Proc // data nodes by host
	Sentinels map[string]*Proc
	Resource  *Proc
	// clockShift: the preloaded library that moves each data node's wall clock by the
	// seconds in its file (dir/clock-<host>); "" when the clocks are left alone.
	clockShift string
	// Hosts are the data nodes (DataNodes, or ClusterNodes when cluster is set).
	Hosts   []string
	cluster *clusterState
}

// ServerSettings are the knobs a scenario turns.
type ServerSettings struct {
	ReplTimeout time.Duration // repl-timeout: when a primary stops counting a silent replica
	// ClockShift, when set, is clockshift.so: every data node runs with it preloaded, its wall
	// clock moved by the seconds written in dir/clock-<host> (the clock-jump fault).
	ClockShift string
	// MinReplicas: min-replicas-to-write (0: off), with min-replicas-max-lag 2 s: a primary
	// that hears from fewer replicas refuses writes (NOREPLICAS).
	MinReplicas int
	// Cluster: a Redis Cluster of 3 primaries and 3 replicas (ClusterNodes) instead of the
	// Sentinel deployment; ClusterKey is the lock's key, whose slot n1 is given.
	Cluster    bool
	ClusterKey string
}

func (p *Proc) Pid() int { return p.cmd.Process.Pid }

func (p *Proc) start(n *Network) error {
	log, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	p.cmd = n.Command(p.Host, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Dir = p.dir
	// A process group of its own: a ^C of the test does not reach the servers before the
	// test has stopped them itself.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = p.cmd.Wait(); log.Close() }()
	return nil
}

// Signal sends sig to the server.
func (p *Proc) Signal(sig syscall.Signal) error { return syscall.Kill(p.Pid(), sig) }

// StartServers starts the data nodes, the sentinels and the resource, and returns once the
// replicas are in sync and every sentinel knows both replicas and the two other sentinels.
func StartServers(n *Network, dir, module string, set ServerSettings) (*Servers, error) {
	s := &Servers{net: n, dir: dir, module: module, Nodes: map[string]*Proc{}, Sentinels: map[string]*Proc{},
		Hosts: dataNodes(set.Cluster)}
	if set.ClockShift != "" {
		s.clockShift = set.ClockShift
		for _, h := range s.Hosts {
			if err := os.WriteFile(s.clockFile(h), []byte("0\n"), 0o644); err != nil {
				return s, err
			}
		}
	}
	if set.Cluster {
		return s, s.startCluster(set)
	}
	primaryIP := n.IP("n1")
	for _, h := range DataNodes {
		args := dataNodeArgs(module, set)
		if h != "n1" {
			args = append(args, "--replicaof", primaryIP, redisPort)
		}
		p, err := s.launch(h, redisPort, "redis-"+h, args)
		if err != nil {
			return s, err
		}
		s.Nodes[h] = p
	}
	for _, h := range DataNodes {
		conf := filepath.Join(dir, "sentinel-"+h+".conf")
		text := strings.Join([]string{
			"port " + sentinelPort, "bind 0.0.0.0", "protected-mode no",
			fmt.Sprintf("sentinel monitor %s %s %s 2", masterName, primaryIP, redisPort),
			"sentinel down-after-milliseconds " + masterName + " 1500",
			"sentinel failover-timeout " + masterName + " 6000",
			"sentinel parallel-syncs " + masterName + " 2",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return s, err
		}
		p, err := s.launch(h, sentinelPort, "sentinel-"+h, []string{"redis-server", conf, "--sentinel"})
		if err != nil {
			return s, err
		}
		s.Sentinels[h] = p
	}
	if err := s.startResource(); err != nil {
		return s, err
	}
	return s, s.awaitReady()
}

// dataNodeArgs is the command line of a data node (Sentinel or Cluster alike).
func dataNodeArgs(module string, set ServerSettings) []string {
	args := []string{"redis-server", "--port", redisPort, "--bind", "0.0.0.0", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--loadmodule", module,
		"--repl-timeout", fmt.Sprint(int(set.ReplTimeout.Seconds())),
		"--repl-ping-replica-period", "1", "--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
		"--notify-keyspace-events", "Kdgx"}
	if set.MinReplicas > 0 {
		args = append(args, "--min-replicas-to-write", fmt.Sprint(set.MinReplicas), "--min-replicas-max-lag", "2")
	}
	return args
}

// startResource starts the guarded resource, a plain redis-server no fault touches.
func (s *Servers) startResource() error {
	res, err := s.launch("res", redisPort, "resource", []string{"redis-server", "--port", redisPort, "--bind", "0.0.0.0",
		"--protected-mode", "no", "--save", "", "--appendonly", "no"})
	s.Resource = res
	return err
}

func (s *Servers) launch(host, port, name string, args []string) (*Proc, error) {
	dir := filepath.Join(s.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &Proc{Host: host, Port: port, dir: dir, args: args, logPath: filepath.Join(s.dir, name+".log")}
	if s.clockShift != "" && strings.HasPrefix(name, "redis-") {
		p.env = []string{"LD_PRELOAD=" + s.clockShift, "CLOCKSHIFT_FILE=" + s.clockFile(host)}
	}
	return p, p.start(s.net)
}

// Restart starts a killed server again with its first arguments (a data node comes back as
// the primary it was configured as; the sentinels turn it into a replica).
func (s *Servers) Restart(p *Proc) error { return p.start(s.net) }

func (s *Servers) clockFile(host string) string { return filepath.Join(s.dir, "clock-"+host) }

// JumpClock sets host's wall clock ahead of the real one by seconds (negative: behind).
func (s *Servers) JumpClock(host string, seconds int) error {
	if s.clockShift == "" {
		return fmt.Errorf("the servers were not started with clockshift.so")
	}
	return os.WriteFile(s.clockFile(host), []byte(fmt.Sprintln(seconds)), 0o644)
}

// Cli runs redis-cli against a server over its namespace's loopback and returns its output.
// A stopped server (SIGSTOP) still accepts the connection but never answers: redis-cli is
// given 5 s (the cluster's view is read from every node, the stopped one included).
func (s *Servers) Cli(p *Proc, args ...string) (string, error) {
	argv := append([]string{"timeout", "5", "redis-cli", "-p", p.Port}, args...)
	cmd := s.net.Command(p.Host, argv...)
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		return text, fmt.Errorf("redis-cli %s on %s: %v: %s", strings.Join(args, " "), p.Host, err, text)
	}
	return text, nil
}

// infoField reads one field of an INFO section.
func (s *Servers) infoField(p *Proc, section, field string) string {
	out, err := s.Cli(p, "INFO", section)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// Primary is the host the majority of reachable sentinels name as primary ("" if none); in a
// Cluster, the primary of the lock key's slot in the view of a majority of the nodes.
func (s *Servers) Primary() string {
	if s.cluster != nil {
		return s.clusterPrimary()
	}
	votes := map[string]int{}
	for _, h := range DataNodes {
		out, err := s.Cli(s.Sentinels[h], "SENTINEL", "get-master-addr-by-name", masterName)
		if err != nil {
			continue
		}
		ip := strings.SplitN(out, "\n", 2)[0]
		for _, d := range DataNodes {
			if s.net.IP(d) == ip {
				votes[d]++
			}
		}
	}
	for h, v := range votes {
		if v >= 2 {
			return h
		}
	}
	return ""
}

func (s *Servers) awaitReady() error {
	return poll(60*time.Second, "the replicas to sync and the sentinels to know each other", func() bool {
		for _, h := range DataNodes[1:] {
			if s.infoField(s.Nodes[h], "replication", "master_link_status") != "up" {
				return false
			}
		}
		for _, h := range DataNodes {
			if s.sentinelCount(h, "replicas") < 2 || s.sentinelCount(h, "sentinels") < 2 {
				return false
			}
		}
		_, err := s.Cli(s.Resource, "PING")
		return err == nil
	})
}

// AwaitSettled waits until the sentinels agree on one primary and the other two data nodes
// replicate from it in sync: the state each run ends in before its final reads.
func (s *Servers) AwaitSettled(timeout time.Duration) (string, error) {
	if s.cluster != nil {
		return s.awaitClusterSettled(timeout)
	}
	var primary string
	err := poll(timeout, "the sentinels to agree on a primary with both replicas in sync", func() bool {
		primary = s.Primary()
		if primary == "" || s.infoField(s.Nodes[primary], "replication", "role") != "master" {
			return false
		}
		for _, h := range DataNodes {
			if h != primary && s.infoField(s.Nodes[h], "replication", "master_link_status") != "up" {
				return false
			}
		}
		return true
	})
	return primary, err
}

func (s *Servers) sentinelCount(h, what string) int {
	out, err := s.Cli(s.Sentinels[h], "SENTINEL", what, masterName)
	if err != nil {
		return 0
	}
	count := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "ip" {
			count++
		}
	}
	return count
}

// Stop kills every server (SIGCONT first, for one stopped by a fault).
func (s *Servers) Stop() {
	all := []*Proc{s.Resource}
	for _, h := range s.Hosts {
		all = append(all, s.Nodes[h], s.Sentinels[h])
	}
	for _, p := range all {
		if p != nil && p.cmd != nil && p.cmd.Process != nil {
			_ = p.Signal(syscall.SIGCONT)
			_ = p.Signal(syscall.SIGKILL)
		}
	}
}

// poll checks cond every 100 ms until it holds or timeout passes.
func poll(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
