// Command jepsen plays faults against rlock in network namespaces, records what the clients
// saw, and checks the histories with Porcupine. See README.md.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := runGoWorker(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	if len(os.Args) >= 3 && os.Args[1] == "table" {
		if err := writeTable(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "recheck" {
		os.Exit(recheck(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(checkDirs(os.Args[2:]))
	}
	os.Exit(runMain(os.Args[1:]))
}

func runMain(args []string) int {
	fs := flag.NewFlagSet("jepsen", flag.ExitOnError)
	out := fs.String("out", "../target/jepsen", "where histories, results and pictures go")
	short := fs.Bool("short", false, "make test's version: one guarantee and the two controls")
	controls := fs.Bool("controls", false, "only the two controls")
	asReal := fs.Bool("as-real", false, "with -short: wire the controls in as the real configuration (the run must then fail)")
	duration := fs.Duration("duration", 22*time.Second, "how long the workers run in each scenario")
	module := fs.String("module", os.Getenv("RLOCK_MODULE"), "librlock.so")
	python := fs.String("python", ".venv/bin/python", "a Python with redis-py and clients/python")
	script := fs.String("worker-py", "worker.py", "the Python worker")
	shift := fs.String("clockshift", "clockshift.so", "clockshift.so, built from clockshift/clockshift.c (for clock-jump)")
	list := fs.Bool("list", false, "list the scenarios and what each claims")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jepsen [flags] [word ...]   (runs the scenarios whose names contain every word)")
		fs.PrintDefaults()
	}
	_ = fs.Parse(args)
	var scenarios []Scenario
	switch {
	case *short:
		scenarios = Short(*asReal)
	case *controls:
		scenarios = Controls()
	default:
		scenarios = Matrix()
	}
	scenarios = Select(scenarios, fs.Args())
	if *list {
		for _, s := range scenarios {
			fmt.Printf("%-36s claims %v\n", s.Name(), s.Claims)
		}
		return 0
	}
	if len(scenarios) == 0 {
		fmt.Fprintln(os.Stderr, "jepsen: no scenario matches")
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	env := Env{Self: self}
	for _, p := range []*string{module, python, out, script, shift} {
		if *p, err = filepath.Abs(*p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	env.Module, env.Python, env.Script, env.ClockShift = *module, *python, *script, *shift
	for _, need := range []string{env.Module, env.Python, env.Script, env.ClockShift} {
		if _, err := os.Stat(need); err != nil {
			fmt.Fprintf(os.Stderr, "jepsen: %v\n", err)
			return 2
		}
	}
	var sums []Summary
	failed := 0
	for _, sc := range scenarios {
		sum, err := PlayScenario(env, sc, *out, *duration, os.Stdout)
		if err != nil {
			sum.Verdict = "ERROR: " + err.Error()
			fmt.Printf("  %s\n", sum.Verdict)
		}
		if sum.Verdict != "as claimed" {
			failed++
		}
		sums = append(sums, sum)
	}
	data, _ := json.MarshalIndent(sums, "", "  ")
	_ = os.WriteFile(filepath.Join(*out, "results.json"), data, 0o644)
	fmt.Printf("\n%d scenarios, %d not as claimed; results in %s\n", len(sums), failed, filepath.Join(*out, "results.json"))
	for _, s := range sums {
		fmt.Printf("  %-34s %s\n", s.Scenario, s.Verdict)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// recheck checks every run of an output directory again with the checks and claims of this
// build (the histories stay as recorded), rewriting each summary.json and results.json.
func recheck(out string) int {
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var sums []Summary
	if err := json.Unmarshal(data, &sums); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	known := map[string]Scenario{}
	for _, sc := range append(Matrix(), Short(false)...) {
		if _, ok := known[sc.Name()]; !ok {
			known[sc.Name()] = sc
		}
	}
	failed := 0
	for i, s := range sums {
		sc, ok := known[s.Scenario]
		if !ok || strings.HasPrefix(s.Verdict, "ERROR") {
			fmt.Printf("== %s: %s, left as it was\n", s.Scenario, s.Verdict)
			failed++
			continue
		}
		dir := filepath.Join(out, s.Scenario)
		paths, _ := filepath.Glob(filepath.Join(dir, "history-*.jsonl"))
		fmt.Printf("== %s\n", s.Scenario)
		s.Grants, s.Indeterminate = 0, 0
		if sums[i], err = checkRun(sc, dir, paths, s, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if sums[i].Verdict != "as claimed" {
			failed++
		}
	}
	data, _ = json.MarshalIndent(sums, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "results.json"), data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("\n%d runs, %d not as claimed\n", len(sums), failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// checkDirs checks the histories of runs already made (each directory holds history-*.jsonl).
func checkDirs(dirs []string) int {
	status := 0
	for _, dir := range dirs {
		paths, _ := filepath.Glob(filepath.Join(dir, "history-*.jsonl"))
		events, err := ReadHistory(paths)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ops, notes, err := Pair(events)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("== %s: %d operations\n", dir, len(ops))
		for _, r := range Check(ops, LoadReports(dir, notes), dir, time.Minute, os.Stdout) {
			if r.Result != "Ok" {
				status = 1
			}
		}
	}
	return status
}

// cleanupOnSignal runs cleanup on SIGINT or SIGTERM (then exits), so an interrupted run
// leaves no namespace or server behind; the returned function stops listening.
func cleanupOnSignal(cleanup func()) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "jepsen: %v: cleaning up\n", sig)
			cleanup()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
