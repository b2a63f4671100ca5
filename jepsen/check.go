package main

// Checking a run's history with Porcupine, and, when a check fails, cutting the history down
// to a smallest failing sub-history (whole lock sessions are dropped while the check still
// fails) that is printed and drawn as Porcupine's HTML picture.

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// CheckResult is one model's verdict on one history.
type CheckResult struct {
	Model      string `json:"model"`
	Result     string `json:"result"` // Ok | Illegal | Unknown (Porcupine timed out)
	Operations int    `json:"operations"`
	// Minimal is the smallest failing sub-history found (Illegal only), one line per operation.
	Minimal []string `json:"minimal,omitempty"`
	Picture string   `json:"picture,omitempty"` // the HTML file of that sub-history
}

type namedModel struct {
	name  string
	model porcupine.Model
	// picks the operations the model is about
	applies func(Op) bool
}

func models(reports Reports) []namedModel {
	// An acquire or a read whose outcome is unknown returns at the end of time: linearized
	// last, without effect, it constrains nothing, so a history is legal with it exactly when
	// it is legal without it. Leaving them out changes no verdict and spares Porcupine a
	// search over where each might have taken effect. (A release or a write of unknown
	// outcome stays: a later grant or read may need it to have taken effect.)
	lockOp := func(o Op) bool {
		return o.F == "release" || (o.F == "acquire" && o.Outcome != "info")
	}
	grant := func(o Op) bool { return o.F == "acquire" && o.Outcome == "ok" }
	resourceOp := func(target string) func(Op) bool {
		return func(o Op) bool {
			return o.Target == target && (o.F == "write" || (o.F == "read" && o.Outcome != "info"))
		}
	}
	// Both resources are checked against the same model: that a write with an older token
	// never lands after a newer one. The plain one has nothing enforcing it but the lock.
	return []namedModel{
		{"lease-lock", LeaseLockModel(reports).ToModel(), lockOp},
		{"token-order", TokenOrderModel, grant},
		{"fenced-register", FencedRegisterModel.ToModel(), resourceOp("fenced")},
		{"plain-register", FencedRegisterModel.ToModel(), resourceOp("plain")},
	}
}

// toPorcupine turns ops into Porcupine's operations; an unknown outcome returns after
// everything else (it may take effect at any time after its call, or never).
func toPorcupine(ops []Op) []porcupine.Operation {
	var last int64
	for _, o := range ops {
		last = max(last, o.Call, o.Return)
	}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		ret := o.Return
		if o.Outcome == "info" {
			ret = last + int64(time.Second)
		}
		out = append(out, porcupine.Operation{
			ClientId: o.Process,
			Input:    opInput{F: o.F, Process: o.Process, Call: o.Call, LeaseNs: o.LeaseMs * int64(time.Millisecond), Token: o.Token},
			Call:     o.Call,
			Output:   opOutput{Outcome: o.Outcome, Token: o.Token, Value: o.Value, Return: ret},
			Return:   ret,
		})
	}
	return out
}

// Check runs every model over the ops (the lease-lock model with the servers' reports) and
// writes a picture of each failure into dir.
func Check(ops []Op, reports Reports, dir string, timeout time.Duration, log io.Writer) []CheckResult {
	var results []CheckResult
	for _, m := range models(reports) {
		var sub []Op
		for _, o := range ops {
			if m.applies(o) {
				sub = append(sub, o)
			}
		}
		res, _ := porcupine.CheckOperationsVerbose(m.model, toPorcupine(sub), timeout)
		r := CheckResult{Model: m.name, Result: string(res), Operations: len(sub)}
		if res == porcupine.Illegal {
			minimal := minimize(m.model, sub, timeout)
			_, info := porcupine.CheckOperationsVerbose(m.model, toPorcupine(minimal), timeout)
			r.Picture = filepath.Join(dir, m.name+".html")
			if err := porcupine.VisualizePath(m.model, info, r.Picture); err != nil {
				fmt.Fprintf(log, "check: drawing %s: %v\n", r.Picture, err)
				r.Picture = ""
			}
			for _, o := range minimal {
				r.Minimal = append(r.Minimal, describeOp(o))
			}
			fmt.Fprintf(log, "%s: ILLEGAL (%d operations); a smallest failing sub-history (%d operations), picture %s:\n  %s\n",
				m.name, len(sub), len(minimal), r.Picture, strings.Join(r.Minimal, "\n  "))
		} else {
			fmt.Fprintf(log, "%s: %s (%d operations)\n", m.name, res, len(sub))
		}
		results = append(results, r)
	}
	return results
}

func describeOp(o Op) string {
	s := fmt.Sprintf("[%d.%03d .. ", o.Call/1e9, o.Call/1e6%1000)
	if o.Outcome == "info" {
		s += "?      ]"
	} else {
		s += fmt.Sprintf("%d.%03d]", o.Return/1e9, o.Return/1e6%1000)
	}
	s += fmt.Sprintf(" p%d s%d %s", o.Process, o.Session, o.F)
	if o.Target != "" {
		s += " " + o.Target
	}
	switch {
	case o.F == "acquire" && o.Outcome == "ok":
		s += fmt.Sprintf(" -> token %d (lease %d ms)", o.Token, o.LeaseMs)
	case o.F == "write":
		s += fmt.Sprintf(" %d -> %s", o.Token, o.Outcome)
	case o.F == "read" && o.Outcome == "ok":
		s += fmt.Sprintf(" -> %d", o.Value)
	default:
		s += " -> " + o.Outcome
	}
	if o.Error != "" {
		s += " (" + o.Error + ")"
	}
	return s
}

// minimize drops whole lock sessions (a process's acquire, write, read and release together)
// while the check still fails, first in halves then one at a time, until no single session
// can go. Dropping a session removes a holder and its writes, never adds a constraint: the
// reads that saw one of its writes go with it, so no failure is made up by the cutting.
func minimize(model porcupine.Model, ops []Op, timeout time.Duration) []Op {
	type sessionKey struct{ p, s int }
	var keys []sessionKey
	seen := map[sessionKey]bool{}
	for _, o := range ops {
		k := sessionKey{o.Process, o.Session}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	build := func(kept []sessionKey) []Op {
		keep := map[sessionKey]bool{}
		for _, k := range kept {
			keep[k] = true
		}
		written := map[int64]bool{} // tokens written by kept sessions (unknown outcomes too)
		for _, o := range ops {
			if keep[sessionKey{o.Process, o.Session}] && o.F == "write" && o.Outcome != "fail" {
				written[o.Token] = true
			}
		}
		var out []Op
		for _, o := range ops {
			if !keep[sessionKey{o.Process, o.Session}] {
				continue
			}
			if o.F == "read" && o.Outcome == "ok" && o.Value != 0 && !written[o.Value] {
				continue
			}
			out = append(out, o)
		}
		return out
	}
	fails := func(kept []sessionKey) bool {
		return porcupine.CheckOperationsTimeout(model, toPorcupine(build(kept)), timeout) == porcupine.Illegal
	}
	deadline := time.Now().Add(60 * time.Second)
	for chunk := len(keys) / 2; chunk >= 1 && time.Now().Before(deadline); {
		removed := false
		for i := 0; i+chunk <= len(keys) && time.Now().Before(deadline); {
			candidate := append(append([]sessionKey{}, keys[:i]...), keys[i+chunk:]...)
			if len(candidate) > 0 && fails(candidate) {
				keys, removed = candidate, true
				continue
			}
			i += chunk
		}
		if !removed {
			chunk /= 2
		}
	}
	out := build(keys)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}
