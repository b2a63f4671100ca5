package main

import (
	"strings"
	"testing"
)

// The tables tell how to repeat a run by its name; the Sentinel row's name is contained in the
// Cluster row's (confirm-all--... in cluster-confirm-all--...), so words alone would pick both.
func TestSelectTakesARunByItsWholeNameAlone(t *testing.T) {
	got := Select(Matrix(), []string{"confirm-all--partition-primary"})
	if len(got) != 1 || got[0].Name() != "confirm-all--partition-primary" {
		t.Fatalf("picked %d runs for the Sentinel run's name: %v", len(got), names(got))
	}
	got = Select(Matrix(), []string{"confirm-all", "partition-primary"})
	if len(got) != 2 {
		t.Fatalf("words picked %v, want the Sentinel and the Cluster run", names(got))
	}
	if got := Select(Matrix(), []string{"cluster"}); len(got) != 30 {
		t.Fatalf("cluster picked %d runs, want 30 (3 rows by 10 faults)", len(got))
	}
}

// The bridge cuts n1 from its replicas (in the Cluster, from its one replica n4 and the third
// primary) and leaves n2 alone reaching both sides.
func TestBridgeLeavesN2AloneOnBothSides(t *testing.T) {
	for _, tc := range []struct {
		hosts, want []string
	}{
		{DataNodes, []string{"n3", "c3", "c4"}},
		{ClusterNodes, []string{"n3", "n4", "n5", "n6", "c3", "c4"}},
	} {
		got := bridgeFarSide(tc.hosts)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("far side of the bridge among %v: %v, want %v", tc.hosts, got, tc.want)
		}
		if contains(got, "n2") || contains(got, "n1") {
			t.Errorf("far side %v holds the bridge n2 or the primary n1", got)
		}
	}
	for replica, primary := range replicaOf {
		if primary == "n1" && !contains(bridgeFarSide(ClusterNodes), replica) {
			t.Errorf("n1's replica %s is not cut from n1 by the bridge", replica)
		}
	}
}

func names(ss []Scenario) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}
