package rlock

// The shared behaviour specification (clients/spec): every scenario run through the package's
// public API against a real server, one subtest per scenario, TestSpec/<file>.<name>
// (`bash clients/go/test.sh -run 'TestSpec/lock\.' -v` for some). What the steps mean is
// clients/spec/README.md; the actor ops are spec_ops_test.go, the JSON side spec_json_test.go.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// specSupported are the capabilities of this runner (README: `requires`).
var specSupported = map[string]bool{"cancel": true, "confirmation": true}

// specDrifts are the known drifts (README): scenario -> what the Go package does instead.
var specDrifts = map[string]string{}

const (
	specAwaitDefaultMS = 5000
	specJoinCap        = 30 * time.Second
)

var specUsers int64

// specScenario is one scenario of a file, named <file stem>.<name>.
type specScenario struct {
	name string
	body map[string]interface{}
}

// specSchemaVersion is the newest scenario-file schema this runner supports.
const specSchemaVersion = "1.0"

// specScenarios reads every scenario file, after check.py has found them well-formed; a file
// with a newer schemaVersion fails the run (it is never skipped).
func specScenarios(t *testing.T) []specScenario {
	dir, _ := filepath.Abs("../spec")
	if out, err := exec.Command("python3", filepath.Join(dir, "check.py")).CombinedOutput(); err != nil {
		t.Fatalf("clients/spec/check.py: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var all []specScenario
	for _, file := range files {
		if filepath.Base(file) == "schema.json" {
			continue
		}
		found, err := readScenarioFile(file)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, found...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}

// readScenarioFile reads one scenario file's scenarios, named <file stem>.<name>, refusing a
// file without a schemaVersion (CONTRACT.md R1.2) or with one newer than specSchemaVersion.
func readScenarioFile(file string) ([]specScenario, error) {
	content, err := readJSONFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	top, _ := content.(map[string]interface{})
	v, ok := top["schemaVersion"]
	if !ok {
		return nil, fmt.Errorf("%s: no schemaVersion: refused (CONTRACT.md R1.2)", file)
	}
	version, _ := v.(string)
	if newer, err := schemaNewer(version, specSchemaVersion); err != nil || newer {
		return nil, fmt.Errorf("%s: schemaVersion %q is not one this runner supports (up to %s): %v", file, v, specSchemaVersion, err)
	}
	stem := strings.TrimSuffix(filepath.Base(file), ".json")
	list, _ := top["scenarios"].([]interface{})
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no scenarios", file)
	}
	var out []specScenario
	for _, s := range list {
		body := s.(map[string]interface{})
		out = append(out, specScenario{name: stem + "." + body["name"].(string), body: body})
	}
	return out, nil
}

// schemaNewer compares two "major.minor" versions: true when version is newer than supported.
func schemaNewer(version, supported string) (bool, error) {
	parse := func(v string) (int, int, error) {
		var major, minor int
		if n, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || n != 2 || fmt.Sprintf("%d.%d", major, minor) != v {
			return 0, 0, fmt.Errorf("not a major.minor version: %q", v)
		}
		return major, minor, nil
	}
	vMajor, vMinor, err := parse(version)
	if err != nil {
		return false, err
	}
	sMajor, sMinor, _ := parse(supported)
	return vMajor > sMajor || vMajor == sMajor && vMinor > sMinor, nil
}

func TestSpec(t *testing.T) {
	scenarios := specScenarios(t)
	standalone := startServer(t)
	counts := map[string][]string{}
	for _, sc := range scenarios {
		sc := sc
		var sub *testing.T
		xfail := false
		t.Run(sc.name, func(t *testing.T) {
			sub = t
			var missing []string
			for _, r := range stringList(sc.body["requires"]) {
				if !specSupported[r] {
					missing = append(missing, r)
				}
			}
			if len(missing) > 0 {
				t.Skipf("the Go runner does not support %s", strings.Join(missing, ", "))
			}
			addr := standalone.addr
			var tp *topology
			if sc.body["topology"] == "replicated" {
				tp = startTopology(t, "replicated") // skips with -short
				addr = tp.state.Primary.addr()
			}
			err := runScenario(addr, tp, sc.body)
			drift, drifting := specDrifts[sc.name]
			switch {
			case err != nil && drifting:
				xfail = true
				t.Skipf("XFAIL (known drift: %s): %v", drift, err)
			case err != nil:
				t.Fatal(err)
			case drifting:
				t.Fatalf("passed, but is listed as a known drift (%s): remove it from specDrifts and the README", drift)
			}
		})
		outcome := "ok"
		switch {
		case sub == nil: // not selected by -run
			continue
		case sub.Failed():
			outcome = "FAILED"
		case xfail:
			outcome = "XFAIL"
		case sub.Skipped():
			outcome = "SKIPPED"
		}
		counts[outcome] = append(counts[outcome], sc.name)
	}
	fmt.Fprintf(os.Stderr, "spec: %d ok, %d skipped, %d xfail, %d failed\n",
		len(counts["ok"]), len(counts["SKIPPED"]), len(counts["XFAIL"]), len(counts["FAILED"]))
	for _, outcome := range []string{"SKIPPED", "XFAIL", "FAILED"} {
		for _, name := range counts[outcome] {
			fmt.Fprintf(os.Stderr, "spec: %s %s\n", outcome, name)
		}
	}
}

// specRun is one scenario being run.
type specRun struct {
	admin      *redis.Client
	topology   *topology
	actors     map[string]*specActor
	saved      map[string]interface{}
	background map[string]*specBackground
	paused     []int
}

// specBackground is a background step: its op runs on its own goroutine until join or cancel.
type specBackground struct {
	step    map[string]interface{}
	started time.Time
	cancel  context.CancelFunc
	done    chan specOutcome
}

// specOutcome is what an op did: a result, an error kind, or a failure (any other error).
type specOutcome struct {
	result  interface{}
	kind    string
	failure error
}

func runScenario(addr string, tp *topology, body map[string]interface{}) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: addr, Protocol: 3, PoolSize: 1, ReadTimeout: 10 * time.Second,
		DisableIdentity: true})
	if err := admin.Ping(ctx).Err(); err != nil {
		return err
	}
	defer admin.Close()
	r := &specRun{admin: admin, topology: tp, actors: map[string]*specActor{},
		saved: map[string]interface{}{}, background: map[string]*specBackground{}}
	defer func() {
		if ferr := r.finish(); err == nil {
			err = ferr
		}
	}()
	if _, err := r.do("FLUSHALL"); err != nil {
		return err
	}
	config, _ := body["server_config"].(map[string]interface{})
	for name, v := range config {
		if _, err := r.do("CONFIG", "SET", name, v.(string)); err != nil {
			return err
		}
	}
	for _, name := range stringList(body["actors"]) {
		user := fmt.Sprintf("spec-%d-%s", atomic.AddInt64(&specUsers, 1), name)
		if _, err := r.do("ACL", "SETUSER", user, "reset", "on", ">spec", "~*", "&*", "+@all"); err != nil {
			return err
		}
		r.actors[name] = newSpecActor(addr, user)
	}
	for i, s := range body["steps"].([]interface{}) {
		step := s.(map[string]interface{})
		if err := r.step(step); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, step["op"], err)
		}
	}
	return nil
}

// finish gives up what is left: background steps, paused replicas, the actors' clients and
// users.
func (r *specRun) finish() error {
	for _, bg := range r.background {
		bg.cancel()
		select {
		case <-bg.done:
		case <-time.After(5 * time.Second):
		}
	}
	if len(r.paused) > 0 {
		r.resumeReplicas()
	}
	for _, a := range r.actors {
		a.close()
		for _, cmd := range [][]string{{"ACL", "SETUSER", a.user, "off"}, {"CLIENT", "KILL", "USER", a.user}, {"ACL", "DELUSER", a.user}} {
			if _, err := r.do(cmd...); err != nil {
				return err
			}
		}
	}
	return nil
}

// do runs an admin command: its reply as the spec's JSON (maps as objects, INFO as fields).
func (r *specRun) do(args ...string) (interface{}, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := r.admin.Do(ctx, cmdArgs(args)...).Result()
	if errors.Is(err, redis.Nil) {
		v, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := specValue(v)
	if text, ok := out.(string); ok && strings.EqualFold(args[0], "INFO") {
		return infoFields(text), nil
	}
	return out, nil
}

func (r *specRun) step(step map[string]interface{}) error {
	op := step["op"].(string)
	started := time.Now()
	withinFrom := started
	if name, ok := step["background"].(string); ok {
		ctx, cancel := context.WithCancel(context.Background())
		bg := &specBackground{step: step, started: started, cancel: cancel, done: make(chan specOutcome, 1)}
		a := r.actors[str(step, "actor")]
		go func() { bg.done <- a.run(ctx, step) }()
		r.background[name] = bg
		return nil
	}
	var out specOutcome
	switch op {
	case "join", "cancel":
		bg := r.background[str(step, "name")]
		if bg == nil {
			return fmt.Errorf("no background step %q is running", str(step, "name"))
		}
		delete(r.background, str(step, "name"))
		started = bg.started
		if op == "cancel" {
			bg.cancel()
		}
		select {
		case out = <-bg.done:
			bg.cancel()
		case <-time.After(specJoinCap):
			bg.cancel()
			return fmt.Errorf("the background step did not end within %v", specJoinCap)
		}
		if op == "cancel" {
			out = specOutcome{} // what the given-up call returned (ctx.Err()) is not looked at
		}
	default:
		if a, ok := r.actors[str(step, "actor")]; ok && op != "kill_connection" && op != "crash" {
			ctx, cancel := context.WithTimeout(context.Background(), specJoinCap)
			out = a.run(ctx, step)
			cancel()
		} else {
			out.result, out.failure = r.runnerOp(op, step)
		}
	}
	return r.check(step, out, started, withinFrom)
}

// runnerOp runs the steps of the runner itself (not of an actor).
func (r *specRun) runnerOp(op string, step map[string]interface{}) (interface{}, error) {
	switch op {
	case "admin":
		return r.do(stringList(step["command"])...)
	case "sleep":
		time.Sleep(time.Duration(num(step, "ms")) * time.Millisecond)
		return nil, nil
	case "await_waiters":
		deadline := time.Now().Add(time.Duration(numOr(step, "within_ms", specAwaitDefaultMS)) * time.Millisecond)
		for {
			n, err := r.waiters(step)
			if err != nil || n == num(step, "count") {
				return nil, err
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%d waiters, not %d", n, num(step, "count"))
			}
			time.Sleep(2 * time.Millisecond)
		}
	case "kill_connection", "crash":
		user := r.actors[str(step, "actor")].user
		if op == "crash" {
			if _, err := r.do("ACL", "SETUSER", user, "off"); err != nil {
				return nil, err
			}
		}
		_, err := r.do("CLIENT", "KILL", "USER", user)
		return nil, err
	case "pause_replicas":
		if r.topology == nil {
			return nil, errors.New("not in a replicated topology")
		}
		for _, replica := range r.topology.do(map[string]interface{}{"op": "describe"}).Replicas {
			r.topology.do(map[string]interface{}{"op": "pause", "port": replica.Port})
			r.paused = append(r.paused, replica.Port)
		}
		return nil, nil
	case "resume_replicas":
		if r.topology == nil {
			return nil, errors.New("not in a replicated topology")
		}
		r.resumeReplicas()
		return nil, nil
	}
	return nil, fmt.Errorf("the Go runner has no op %q", op)
}

func (r *specRun) resumeReplicas() {
	for _, port := range r.paused {
		r.topology.do(map[string]interface{}{"op": "resume", "port": port})
	}
	r.paused = nil
}

// waiters counts what await_waiters counts (README).
func (r *specRun) waiters(step map[string]interface{}) (int64, error) {
	kind := str(step, "type")
	if kind == "server" {
		info, err := r.do("INFO", "rlock")
		n, _ := info.(map[string]interface{})["rlock_waiters"].(int64)
		return n, err
	}
	command := map[string]string{"lock": "RLOCK.INFO", "rwlock": "RWLOCK.INFO", "semaphore": "RSEM.INFO"}[kind]
	if command == "" {
		return 0, fmt.Errorf("await_waiters of an unknown type %q", kind)
	}
	reply, err := r.do(command, str(step, "key"))
	info, _ := reply.(map[string]interface{})
	if err != nil || info == nil {
		return 0, err
	}
	switch kind {
	case "lock":
		n, _ := info["waiters"].(int64)
		return n, nil
	case "rwlock":
		readers, _ := info["waiting_readers"].(int64)
		writers, _ := info["waiting_writers"].(int64)
		return readers + writers, nil
	}
	list, _ := info["waiters"].([]interface{})
	return int64(len(list)), nil
}

// check compares an outcome with the step's error, expect, within_ms, after_ms; and saves.
func (r *specRun) check(step map[string]interface{}, out specOutcome, started, withinFrom time.Time) error {
	if out.failure != nil {
		return out.failure
	}
	want := str(step, "error")
	if out.kind != want {
		got := out.kind
		if got == "" {
			got = fmt.Sprintf("success (%#v)", out.result)
		}
		if want == "" {
			want = "success"
		}
		return fmt.Errorf("expected %s, got %s", want, got)
	}
	if expected, ok := step["expect"]; ok && !r.matches(expected, out.result) {
		return fmt.Errorf("expected %s, got %#v", jsonText(expected), out.result)
	}
	if limit, ok := step["within_ms"].(int64); ok {
		if took := time.Since(withinFrom).Milliseconds(); took > limit {
			return fmt.Errorf("took %d ms, more than %d ms", took, limit)
		}
	}
	if floor, ok := step["after_ms"].(int64); ok {
		if waited := time.Since(started).Milliseconds(); waited < floor {
			return fmt.Errorf("ended after %d ms, sooner than %d ms", waited, floor)
		}
	}
	if name, ok := step["save"].(string); ok {
		r.saved[name] = out.result
	}
	return nil
}
