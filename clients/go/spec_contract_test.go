package rlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The spec contract (clients/spec): the runner refuses a file whose schemaVersion is newer
// than it supports, and every scenario of clients/spec/valid-fail (expectations deliberately
// wrong) must FAIL here: a runner that stopped asserting would pass them.

func TestSpecRunnerRefusesANewerSchemaVersion(t *testing.T) {
	files, _ := filepath.Glob("../spec/invalid/*.json")
	own := filepath.Join(t.TempDir(), "newer-schema.json")
	newer := `{"schemaVersion": "2.0", "description": "from a future schema", "scenarios": [
		{"name": "x", "description": "x", "actors": ["A"], "steps": []}]}`
	if err := os.WriteFile(own, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, file := range append(files, own) {
		if _, err := readScenarioFile(file); err == nil || !strings.Contains(err.Error(), "schemaVersion") {
			t.Fatalf("%s: read without a schemaVersion refusal: %v", file, err)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("no newer-schema file was tried")
	}
	for _, ok := range []string{"1.0", "0.9"} {
		if newer, err := schemaNewer(ok, specSchemaVersion); newer || err != nil {
			t.Fatalf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"1.1", "2.0", "10.0"} {
		if newer, _ := schemaNewer(bad, specSchemaVersion); !newer {
			t.Fatalf("%s accepted", bad)
		}
	}
	if _, err := schemaNewer("one", specSchemaVersion); err == nil {
		t.Fatal("a malformed version accepted")
	}
}

func TestSpecValidFailScenariosAllFail(t *testing.T) {
	files, _ := filepath.Glob("../spec/valid-fail/*.json")
	// Until clients/spec/valid-fail exists, one of our own: the token of a free lock is not 0,
	// and the server does not show two holds.
	own := filepath.Join(t.TempDir(), "wrong-expectations.json")
	wrong := `{"schemaVersion": "1.0", "description": "deliberately wrong", "scenarios": [
		{"name": "token_is_not_zero", "description": "wrong", "actors": ["A"], "steps": [
			{"op": "acquire", "actor": "A", "type": "lock", "key": "k", "expect": 0}]},
		{"name": "two_holds_are_not_one", "description": "wrong", "actors": ["A"], "steps": [
			{"op": "acquire", "actor": "A", "type": "lock", "key": "k", "expect": {"$gt": 0}},
			{"op": "admin", "command": ["RLOCK.INFO", "k"], "expect": {"holds": 2}}]}]}`
	if err := os.WriteFile(own, []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	standalone := startServer(t)
	ran := 0
	for _, file := range append(files, own) {
		scenarios, err := readScenarioFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				addr, tp := standalone.addr, (*topology)(nil)
				if sc.body["topology"] == "replicated" {
					tp = startTopology(t, "replicated") // skips with -short
					addr = tp.state.Primary.addr()
				}
				if err := runScenario(addr, tp, sc.body); err == nil {
					t.Fatalf("%s passed: its expectations are deliberately wrong, so the runner stopped asserting", sc.name)
				} else {
					t.Logf("failed as it must: %v", err)
				}
			})
			ran++
		}
	}
	if ran < 2 {
		t.Fatalf("only %d valid-fail scenarios ran", ran)
	}
}
