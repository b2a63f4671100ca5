package main

import "testing"

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
	if got := Select(Matrix(), []string{"cluster"}); len(got) != 21 {
		t.Fatalf("cluster picked %d runs, want 21 (3 rows by 7 faults)", len(got))
	}
}

func names(ss []Scenario) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}
