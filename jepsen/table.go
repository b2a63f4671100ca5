package main

// The guarantees table of docs/guarantees.md, made from a run's results.json, so the page
// carries the figures a run measured and nothing typed by hand.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// writeTable prints the markdown tables for the summaries in the results.json files; a run
// found in several files is taken from the last.
func writeTable(paths []string, w io.Writer) error {
	var sums []Summary
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var some []Summary
		if err := json.Unmarshal(data, &some); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		sums = append(sums, some...)
	}
	// A run repeated in a later file replaces the earlier one (the file order is the caller's).
	latest := map[string]int{}
	var unique []Summary
	for _, s := range sums {
		if i, ok := latest[s.Scenario]; ok {
			unique[i] = s
			continue
		}
		latest[s.Scenario] = len(unique)
		unique = append(unique, s)
	}
	sums = unique
	cell := map[[2]string]Summary{}
	for _, s := range sums {
		cell[[2]string{s.Config, s.Fault}] = s
	}
	mark := func(s Summary, model string) string {
		for _, c := range s.Checks {
			if c.Model == model {
				switch c.Result {
				case "Ok":
					return "✓"
				case "Illegal":
					return "✗"
				}
				return "?"
			}
		}
		return "–"
	}
	var faults []string
	for _, f := range Faults {
		faults = append(faults, f.Name)
	}
	fmt.Fprintf(w, "| configuration | %s |\n|---|%s\n", strings.Join(faults, " | "), strings.Repeat("---|", len(faults)))
	for _, c := range Configs {
		for _, fenced := range []bool{true, false} {
			register, label := "fenced-register", c.Name+", fenced resource"
			if !fenced {
				register, label = "plain-register", c.Name+", plain resource"
			}
			row := []string{label}
			for _, f := range faults {
				s, ok := cell[[2]string{c.Name, f}]
				switch {
				case !ok:
					row = append(row, "not run")
				case strings.HasPrefix(s.Verdict, "ERROR"):
					row = append(row, "error")
				default:
					row = append(row, fmt.Sprintf("%sME %sF %sT", mark(s, "lease-lock"), mark(s, register), mark(s, "token-order")))
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
	fmt.Fprintf(w, "\nPer configuration, over all faults (the same runs):\n\n")
	fmt.Fprintf(w, "| configuration | runs | operations | grants | indeterminate | lost-lock notices | lease-lock violated | token order violated | fenced resource violated | plain resource violated | not as claimed |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range Configs {
		var runs, ops, grants, indet, lost, bad int
		violated := map[string]int{}
		for _, s := range sums {
			if s.Config != c.Name {
				continue
			}
			runs++
			ops, grants, indet, lost = ops+s.Operations, grants+s.Grants, indet+s.Indeterminate, lost+s.Lost
			for _, ch := range s.Checks {
				if ch.Result == "Illegal" {
					violated[ch.Model]++
				}
			}
			if s.Verdict != "as claimed" {
				bad++
			}
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", c.Name, runs, ops, grants, indet, lost,
			violated["lease-lock"], violated["token-order"], violated["fenced-register"], violated["plain-register"], bad)
	}
	fmt.Fprintf(w, "\nEach run, its claims and verdict:\n\n| run (repeat: `sudo bash jepsen/test.sh <run>`) | operations | grants | indeterminate | lease-lock | token order | fenced | plain | verdict |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		fmt.Fprintf(w, "| `%s` | %d | %d | %d | %s | %s | %s | %s | %s |\n", s.Scenario, s.Operations, s.Grants, s.Indeterminate,
			mark(s, "lease-lock"), mark(s, "token-order"), mark(s, "fenced-register"), mark(s, "plain-register"), s.Verdict)
	}
	return nil
}
