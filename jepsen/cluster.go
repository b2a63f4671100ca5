package main

// The Cluster topology: six cluster-enabled redis-servers with the module, n1, n2, n3 the
// primaries and n4, n5, n6 their replicas (n4 of n1, ...), joined with CLUSTER MEET,
// ADDSLOTSRANGE and REPLICATE so the layout is known: n1 is given the slot range holding the
// lock's key, so the faults aimed at "n1, the primary" hit the key's shard, as in Sentinel.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// clusterNodeTimeout is cluster-node-timeout: how long a silent node takes to be suspected
// (the harness's Cluster fixture uses the same).
const clusterNodeTimeout = 1500 * time.Millisecond

// replicaOf is each replica's first primary.
var replicaOf = map[string]string{"n4": "n1", "n5": "n2", "n6": "n3"}

// clusterState is what the runner knows of the Cluster it made.
type clusterState struct {
	slot int // the lock key's hash slot
}

func (s *Servers) startCluster(set ServerSettings) error {
	for _, h := range ClusterNodes {
		args := append(dataNodeArgs(s.module, set), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", fmt.Sprint(clusterNodeTimeout.Milliseconds()),
			"--cluster-announce-ip", s.net.IP(h))
		p, err := s.launch(h, redisPort, "redis-"+h, args)
		if err != nil {
			return err
		}
		s.Nodes[h] = p
	}
	if err := s.startResource(); err != nil {
		return err
	}
	if err := poll(30*time.Second, "the cluster nodes and the resource to answer", func() bool {
		for _, p := range append(s.procs(), s.Resource) {
			if _, err := s.Cli(p, "PING"); err != nil {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	out, err := s.Cli(s.Nodes["n1"], "CLUSTER", "KEYSLOT", set.ClusterKey)
	if err != nil {
		return err
	}
	slot, err := strconv.Atoi(out)
	if err != nil {
		return fmt.Errorf("CLUSTER KEYSLOT %s: %q", set.ClusterKey, out)
	}
	s.cluster = &clusterState{slot: slot}
	for _, h := range ClusterNodes[1:] {
		if _, err := s.Cli(s.Nodes["n1"], "CLUSTER", "MEET", s.net.IP(h), redisPort); err != nil {
			return err
		}
	}
	for i, h := range []string{"n1", "n2", "n3"} {
		lo, hi := slotRange(slot, i)
		if _, err := s.Cli(s.Nodes[h], "CLUSTER", "ADDSLOTSRANGE", fmt.Sprint(lo), fmt.Sprint(hi)); err != nil {
			return err
		}
	}
	ids := map[string]string{}
	if err := poll(30*time.Second, "every cluster node to know the five others", func() bool {
		for _, h := range ClusterNodes {
			nodes := s.clusterNodes(h)
			if len(nodes) != len(ClusterNodes) {
				return false
			}
			for _, n := range nodes {
				if strings.Contains(n.flags, "handshake") || strings.Contains(n.flags, "noaddr") {
					return false
				}
				if strings.Contains(n.flags, "myself") {
					ids[h] = n.id
				}
			}
		}
		return true
	}); err != nil {
		return err
	}
	for replica, primary := range replicaOf {
		if _, err := s.Cli(s.Nodes[replica], "CLUSTER", "REPLICATE", ids[primary]); err != nil {
			return err
		}
	}
	_, err = s.AwaitSettled(60 * time.Second)
	return err
}

// slotRange is the i-th of three ranges that split the 16384 slots; range 0 holds slot.
func slotRange(slot, i int) (int, int) {
	bounds := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	first := 0
	for j, b := range bounds {
		if b[0] <= slot && slot <= b[1] {
			first = j
		}
	}
	b := bounds[(first+i)%3]
	return b[0], b[1]
}

func (s *Servers) procs() []*Proc {
	var out []*Proc
	for _, h := range s.Hosts {
		out = append(out, s.Nodes[h])
	}
	return out
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, host, flags, primaryID string
	slots                      []string
}

// clusterNodes is host's view of the cluster (nil if it does not answer).
func (s *Servers) clusterNodes(host string) []clusterNode {
	out, err := s.Cli(s.Nodes[host], "CLUSTER", "NODES")
	if err != nil {
		return nil
	}
	var nodes []clusterNode
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		ip := strings.SplitN(f[1], ":", 2)[0]
		n := clusterNode{id: f[0], flags: f[2], primaryID: f[3], slots: f[8:]}
		for _, h := range ClusterNodes {
			if s.net.IP(h) == ip {
				n.host = h
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// owns says whether a CLUSTER NODES slot list holds slot.
func owns(slots []string, slot int) bool {
	for _, r := range slots {
		lo, hi, _ := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue // "[slot->-id]": a slot being migrated
		}
		b := a
		if hi != "" {
			b, _ = strconv.Atoi(hi)
		}
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// clusterPrimary is the host a majority of all the cluster's nodes name as the primary of
// the key's slot ("" if no majority).
func (s *Servers) clusterPrimary() string {
	votes := map[string]int{}
	for _, h := range ClusterNodes {
		for _, n := range s.clusterNodes(h) {
			if strings.Contains(n.flags, "master") && owns(n.slots, s.cluster.slot) {
				votes[n.host]++
			}
		}
	}
	for h, v := range votes {
		if v > len(ClusterNodes)/2 {
			return h
		}
	}
	return ""
}

// clusterReplica is a node that replicates primary, in primary's own view ("" if none).
func (s *Servers) clusterReplica(primary string) string {
	var id string
	nodes := s.clusterNodes(primary)
	for _, n := range nodes {
		if n.host == primary {
			id = n.id
		}
	}
	for _, n := range nodes {
		if id != "" && n.primaryID == id && !strings.Contains(n.flags, "fail") {
			return n.host
		}
	}
	return ""
}

// clusterFailover asks replica, of the key's primary old, for CLUSTER FAILOVER with option
// (none, or FORCE): what SENTINEL FAILOVER is in the Sentinel topology.
func (s *Servers) clusterFailover(old, replica string, option ...string) error {
	if old == "" || replica == "" {
		return fmt.Errorf("CLUSTER FAILOVER: no primary (%q) with a replica (%q) for the key's slot", old, replica)
	}
	out, err := s.Cli(s.Nodes[replica], append([]string{"CLUSTER", "FAILOVER"}, option...)...)
	if err == nil && out != "OK" {
		err = fmt.Errorf("CLUSTER FAILOVER on %s: %s", replica, out)
	}
	return err
}

// awaitClusterSettled waits until every node says the cluster is ok and names the same
// primary for the key, and every replica's link to its primary is up.
func (s *Servers) awaitClusterSettled(timeout time.Duration) (string, error) {
	var primary string
	err := poll(timeout, "the cluster to agree on the key's primary with every replica in sync", func() bool {
		primary = ""
		for _, h := range ClusterNodes {
			if !strings.Contains(s.infoOf(h, "CLUSTER", "INFO"), "cluster_state:ok") {
				return false
			}
			role := s.infoField(s.Nodes[h], "replication", "role")
			if role == "slave" && s.infoField(s.Nodes[h], "replication", "master_link_status") != "up" {
				return false
			}
			for _, n := range s.clusterNodes(h) {
				if !strings.Contains(n.flags, "master") || !owns(n.slots, s.cluster.slot) {
					continue
				}
				if primary != "" && primary != n.host {
					return false
				}
				primary = n.host
			}
		}
		return primary != "" && s.clusterReplica(primary) != ""
	})
	return primary, err
}

func (s *Servers) infoOf(host string, args ...string) string {
	out, _ := s.Cli(s.Nodes[host], args...)
	return out
}
