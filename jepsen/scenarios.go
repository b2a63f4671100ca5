package main

// The matrix: configurations (rows) by faults (columns), what each cell claims, and the two
// controls that must be caught.

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Config is how the workers take the lock.
type Config struct {
	Name    string
	Lock    string // rlock | setnx
	Confirm string // auto | off | replica count
	Lease   time.Duration
	Hold    time.Duration
	// MinReplicas sets the data nodes' min-replicas-to-write (max lag 2 s); 0: off.
	MinReplicas int
	// Cluster: the Redis Cluster topology (3 primaries, 3 replicas) instead of Sentinel.
	Cluster bool
}

// replicas is how many replicas the lock key's primary has: 2 in Sentinel, 1 in Cluster.
func (c Config) replicas() int {
	if c.Cluster {
		return 1
	}
	return 2
}

// confirmsAll: every replica of the key's primary confirms a grant (an explicit count).
func (c Config) confirmsAll() bool { return c.Confirm == fmt.Sprint(c.replicas()) }

func (c Config) Describe() string {
	if c.Cluster {
		return fmt.Sprintf("Cluster 3+3, rlock, confirmation %s, lease %v", c.Confirm, c.Lease)
	}
	if c.Lock == "setnx" {
		return fmt.Sprintf("plain SET NX PX %v (no fencing token from the lock)", c.Lease)
	}
	if c.MinReplicas > 0 {
		return fmt.Sprintf("rlock, confirmation %s, lease %v, servers with min-replicas-to-write %d", c.Confirm, c.Lease, c.MinReplicas)
	}
	return fmt.Sprintf("rlock, confirmation %s, lease %v", c.Confirm, c.Lease)
}

func rlockConfig(name, confirm string) Config {
	return Config{Name: name, Lock: "rlock", Confirm: confirm, Lease: 2 * time.Second, Hold: 300 * time.Millisecond}
}

func withMinReplicas(c Config, n int) Config { c.MinReplicas = n; return c }

func inCluster(c Config) Config { c.Cluster = true; c.Name = "cluster-" + c.Name; return c }

// Configs are the rows. Every run writes to a fenced and a plain resource, so each row is
// seen both with and without fencing.
var Configs = []Config{
	rlockConfig("confirm-auto", "auto"),
	withMinReplicas(rlockConfig("confirm-auto-minrep", "auto"), 1),
	rlockConfig("confirm-all", "2"),
	rlockConfig("confirm-1", "1"),
	rlockConfig("confirm-off", "off"),
	{Name: "setnx", Lock: "setnx", Confirm: "off", Lease: 2 * time.Second, Hold: 300 * time.Millisecond},
	// Cluster rows: confirmation by all is by the key's one replica there.
	inCluster(rlockConfig("confirm-auto", "auto")),
	inCluster(rlockConfig("confirm-all", "1")),
	inCluster(rlockConfig("confirm-off", "off")),
}

// Fault is a column: what is done to the system while the workers run.
type Fault struct {
	Name, Description string
	After             time.Duration // when it starts, after the workers
	ReplTimeout       time.Duration // the servers' repl-timeout, when the fault needs another
	ClockJump         bool          // the data nodes' wall clocks can be moved (clockshift.so)
	// Play does the fault in either topology (n1 is the key's primary in both; in the
	// Cluster its replica is n4, the other primaries n2, n3).
	Play func(r *Run) error
}

// minority is the first primary with the clients that stay with it in a partition; the
// majority is every other data node (and sentinel) with c3, c4.
var minority = []string{"n1", "c1", "c2"}

// bridgeFarSide is the side of a bridge cut from the minority: every data node but n2 (the
// bridge) and the minority's n1, with c3, c4. In Sentinel that is n3 (n1's other replica); in
// the Cluster it holds n1's replica n4 and the third primary n3, so the primary that reaches
// both sides, n2, is the one vote n1 still hears.
func bridgeFarSide(hosts []string) []string {
	var out []string
	for _, h := range append(append([]string{}, hosts...), "c3", "c4") {
		if h != "n2" && !contains(minority, h) {
			out = append(out, h)
		}
	}
	return out
}

func (r *Run) majority() []string {
	var out []string
	for _, h := range append(append([]string{}, r.Srv.Hosts...), "c3", "c4") {
		if !contains(minority, h) {
			out = append(out, h)
		}
	}
	return out
}

// Faults are the columns.
var Faults = []Fault{
	{Name: "partition-primary", After: 3 * time.Second,
		Description: "the primary and clients c1, c2 cut off from the replicas, the sentinels (Cluster: the other primaries) and c3, c4 (failover on the majority side)",
		Play: func(r *Run) error {
			return r.partitionPrimary(4 * time.Second)
		}},
	{Name: "partition-long", After: 3 * time.Second, ReplTimeout: 3 * time.Second,
		Description: "as partition-primary, held past the old primary's repl-timeout (3 s), so it stops counting its replicas",
		Play: func(r *Run) error {
			return r.partitionPrimary(8 * time.Second)
		}},
	{Name: "bridge", After: 3 * time.Second,
		Description: "n1, c1, c2 and n3, c3, c4 cut from each other; n2 (and its sentinel) reaches both; SENTINEL FAILOVER during it " +
			"(Cluster: n1, c1, c2 cut from every node but n2 and from c3, c4; n2, a primary, reaches both sides; " +
			"CLUSTER FAILOVER FORCE on n4, n1's replica, which cannot reach n1: n1 can learn that it was deposed only through n2)",
		Play: func(r *Run) error {
			far := bridgeFarSide(r.Srv.Hosts)
			// The Cluster's replica is found before the cut: the primary's view of it is
			// "fail?" soon after.
			var old, replica string
			if r.Srv.cluster != nil {
				old = r.Srv.Primary()
				replica = r.Srv.clusterReplica(old)
			}
			if err := r.Net.Cut(minority, far); err != nil {
				return err
			}
			r.note("bridge: {%s} x {%s}, n2 sees both", strings.Join(minority, " "), strings.Join(far, " "))
			var err error
			if r.Srv.cluster != nil {
				err = r.clusterFailover(old, replica, "FORCE")
			} else {
				err = r.failover("n2")
			}
			if err != nil {
				return err
			}
			time.Sleep(3 * time.Second)
			r.note("heal")
			return r.Net.Heal()
		}},
	{Name: "flapping", After: 3 * time.Second,
		Description: "the primary's partition (as partition-primary) cut and healed every 0.7 s for 10 s",
		Play: func(r *Run) error {
			r.note("flapping starts")
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
				if err := r.Net.Cut(minority, r.majority()); err != nil {
					return err
				}
				time.Sleep(700 * time.Millisecond)
				if err := r.Net.Heal(); err != nil {
					return err
				}
				time.Sleep(700 * time.Millisecond)
			}
			r.note("flapping ends; primary now %q", r.Srv.Primary())
			return nil
		}},
	{Name: "client-cut", After: 3 * time.Second,
		Description: "a holding client cut off from every data node and sentinel (not from the resource) for lease + 2 s; SENTINEL FAILOVER during it",
		Play: func(r *Run) error {
			h, err := r.holdingWorker(10 * time.Second)
			if err != nil {
				return err
			}
			if err := r.Net.Cut([]string{h}, r.Srv.Hosts); err != nil {
				return err
			}
			r.note("worker %s (holding) cut off from %s", h, strings.Join(r.Srv.Hosts, " "))
			if err := r.failover("n2"); err != nil {
				return err
			}
			time.Sleep(r.Scenario.Config.Lease + 2*time.Second)
			r.note("heal")
			return r.Net.Heal()
		}},
	{Name: "kill-primary", After: 3 * time.Second,
		Description: "kill -9 of the primary; the sentinels promote a replica; the old primary restarts (empty) and is made a replica",
		Play: func(r *Run) error {
			p := r.Srv.Primary()
			if err := r.Srv.Nodes[p].Signal(syscall.SIGKILL); err != nil {
				return err
			}
			r.note("SIGKILL redis on %s", p)
			if err := r.awaitPrimaryOtherThan(p); err != nil {
				return err
			}
			time.Sleep(2 * time.Second)
			r.note("restart redis on %s", p)
			return r.Srv.Restart(r.Srv.Nodes[p])
		}},
	{Name: "pause-primary", After: 3 * time.Second,
		Description: "SIGSTOP of the primary until the sentinels promote a replica, then SIGCONT",
		Play: func(r *Run) error {
			p := r.Srv.Primary()
			if err := r.Srv.Nodes[p].Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			r.note("SIGSTOP redis on %s", p)
			err := r.awaitPrimaryOtherThan(p)
			time.Sleep(time.Second)
			r.note("SIGCONT redis on %s", p)
			if e := r.Srv.Nodes[p].Signal(syscall.SIGCONT); err == nil {
				err = e
			}
			return err
		}},
	{Name: "kill-holder", After: 3 * time.Second,
		Description: "kill -9 of a worker while it holds the lock; SENTINEL FAILOVER right after",
		Play: func(r *Run) error {
			h, err := r.holdingWorker(10 * time.Second)
			if err != nil {
				return err
			}
			r.note("SIGKILL worker %s", h)
			if err := r.workers[h].Process.Kill(); err != nil {
				return err
			}
			return r.failover("n2")
		}},
	{Name: "pause-holder", After: 3 * time.Second,
		Description: "SIGSTOP of a worker while it holds the lock, for its lease + 1.5 s; SENTINEL FAILOVER during it",
		Play: func(r *Run) error {
			h, err := r.holdingWorker(10 * time.Second)
			if err != nil {
				return err
			}
			w := r.workers[h].Process
			if err := w.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			r.note("SIGSTOP worker %s (holding)", h)
			stopped := time.Now()
			if err := r.failover("n2"); err != nil {
				_ = w.Signal(syscall.SIGCONT)
				return err
			}
			time.Sleep(time.Until(stopped.Add(r.Scenario.Config.Lease + 1500*time.Millisecond)))
			r.note("SIGCONT worker %s", h)
			return w.Signal(syscall.SIGCONT)
		}},
	{Name: "clock-jump", After: 3 * time.Second, ClockJump: true,
		Description: "the primary's wall clock jumps 10 s ahead (clockshift.so); SENTINEL FAILOVER 3 s later, to a replica whose clock did not jump",
		Play: func(r *Run) error {
			p := r.Srv.Primary()
			if err := r.Srv.JumpClock(p, 10); err != nil {
				return err
			}
			r.note("clock of redis on %s: +10 s", p)
			time.Sleep(3 * time.Second)
			return r.failover("n2")
		}},
}

// Scenario is one cell.
type Scenario struct {
	Config Config
	Fault  Fault
	// Claims: the result each named check must have (Ok for a guarantee, Illegal for a
	// control that must be caught). Checks not named are recorded, not judged.
	Claims map[string]string
}

func (s Scenario) Name() string { return s.Config.Name + "--" + s.Fault.Name }

// Verdict says whether the checks came out as the scenario claims.
func (s Scenario) Verdict(checks []CheckResult) string {
	var bad []string
	for _, c := range checks {
		if want, ok := s.Claims[c.Model]; ok && c.Result != want {
			bad = append(bad, fmt.Sprintf("%s is %s, claimed %s", c.Model, c.Result, want))
		}
	}
	if len(bad) == 0 {
		return "as claimed"
	}
	return "UNEXPECTED: " + strings.Join(bad, "; ")
}

// claims is what the project promises for a cell (docs/guarantees.md states the same):
//   - the fenced resource never takes an older token after a newer one: always;
//   - tokens rise across failovers for rlock, unless a clock jumped;
//   - grants exclude each other (lease-lock) when every replica confirmed them (an explicit
//     count of all of them), unless the primary's clock jumped (the lease is measured by
//     it). Not for confirm-auto: these runs found two holders with it, through a deposed
//     primary that no longer counts its replicas, and through a replica that confirmed a
//     grant on the old primary and then took the new primary's history in a failover.
func claims(c Config, f Fault) map[string]string {
	m := map[string]string{"fenced-register": "Ok"}
	if c.Lock != "rlock" {
		return m
	}
	if !f.ClockJump {
		m["token-order"] = "Ok"
		if c.confirmsAll() {
			m["lease-lock"] = "Ok"
		}
	}
	// After a clock jump, tokens rise across the failover for the grants the new primary had
	// when it was promoted (it learnt their tokens as a replica): with confirmation by every
	// replica, every grant a client was told of.
	if f.ClockJump && c.confirmsAll() {
		m["token-order"] = "Ok"
	}
	return m
}

// Matrix is every cell, with its claims (a control's cell also claims what it must catch).
func Matrix() []Scenario {
	var out []Scenario
	for _, f := range Faults {
		for _, c := range Configs {
			sc := Scenario{Config: c, Fault: f, Claims: claims(c, f)}
			for _, ctl := range Controls() {
				if ctl.Name() == sc.Name() {
					for model, want := range ctl.Claims {
						sc.Claims[model] = want
					}
				}
			}
			out = append(out, sc)
		}
	}
	return out
}

// Controls are the cells that must be caught: the checker is shown able to see a violation.
func Controls() []Scenario {
	return []Scenario{
		{Config: configNamed("confirm-off"), Fault: faultNamed("partition-primary"),
			Claims: map[string]string{"lease-lock": "Illegal"}},
		{Config: configNamed("setnx"), Fault: faultNamed("pause-holder"),
			Claims: map[string]string{"plain-register": "Illegal"}},
	}
}

// Short is make test's version: the guarantee under a partition of the primary, in Sentinel
// and in Cluster, and both controls. asReal wires the controls in as the real configuration:
// they are then claimed to hold, and the run must fail.
func Short(asReal bool) []Scenario {
	fault := faultNamed("partition-primary")
	var out []Scenario
	for _, c := range []Config{configNamed("confirm-all"), configNamed("cluster-confirm-all")} {
		out = append(out, Scenario{Config: c, Fault: fault, Claims: claims(c, fault)})
	}
	for _, c := range Controls() {
		if asReal {
			c.Claims = map[string]string{"lease-lock": "Ok", "plain-register": "Ok", "fenced-register": "Ok"}
		}
		out = append(out, c)
	}
	return out
}

func configNamed(name string) Config {
	for _, c := range Configs {
		if c.Name == name {
			return c
		}
	}
	panic("no config " + name)
}

func faultNamed(name string) Fault {
	for _, f := range Faults {
		if f.Name == name {
			return f
		}
	}
	panic("no fault " + name)
}

// Select keeps the scenarios whose name contains every given word (none: all). A single word
// that is a run's whole name picks that run alone (confirm-all--bridge, not also
// cluster-confirm-all--bridge): the repeat command the tables print.
func Select(all []Scenario, words []string) []Scenario {
	var out []Scenario
	for _, s := range all {
		if len(words) == 1 && s.Name() == words[0] {
			return []Scenario{s}
		}
	}
	for _, s := range all {
		keep := true
		for _, w := range words {
			keep = keep && strings.Contains(s.Name(), w)
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

// --- fault helpers ---

func (r *Run) partitionPrimary(after time.Duration) error {
	if err := r.Net.Cut(minority, r.majority()); err != nil {
		return err
	}
	r.note("partition: {%s} x {%s} (the resource reaches everyone)", strings.Join(minority, " "), strings.Join(r.majority(), " "))
	if err := r.awaitPrimaryOtherThan("n1"); err != nil {
		return err
	}
	time.Sleep(after)
	r.note("heal")
	return r.Net.Heal()
}

// failover asks the sentinel on host for a failover and waits for the new primary (in a
// Cluster: CLUSTER FAILOVER on the replica of the key's primary).
func (r *Run) failover(host string) error {
	if r.Srv.cluster != nil {
		old := r.Srv.Primary()
		return r.clusterFailover(old, r.Srv.clusterReplica(old))
	}
	old := r.Srv.Primary()
	out, err := r.Srv.Cli(r.Srv.Sentinels[host], "SENTINEL", "FAILOVER", masterName)
	r.note("SENTINEL FAILOVER on %s's sentinel: %s", host, out)
	if err != nil || out != "OK" {
		return fmt.Errorf("SENTINEL FAILOVER: %v %s", err, out)
	}
	return r.awaitPrimaryOtherThan(old)
}

// clusterFailover asks replica, of the key's primary old, for CLUSTER FAILOVER (option: FORCE,
// when it cannot reach old) and waits for the new primary.
func (r *Run) clusterFailover(old, replica string, option ...string) error {
	err := r.Srv.clusterFailover(old, replica, option...)
	r.note("CLUSTER FAILOVER %s on %s (replica of %s): %v", strings.Join(option, " "), replica, old, err)
	if err != nil {
		return err
	}
	return r.awaitPrimaryOtherThan(old)
}

func (r *Run) awaitPrimaryOtherThan(old string) error {
	var now string
	err := poll(30*time.Second, "the sentinels (or the cluster) to promote a replica", func() bool {
		now = r.Srv.Primary()
		return now != "" && now != old
	})
	if err == nil {
		r.note("%s is now the primary (of the key)", now)
	}
	return err
}
