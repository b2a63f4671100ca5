package main

// The three sequential specifications the histories are checked against, as Porcupine
// models. Porcupine searches for a linearization: an order of the operations, consistent with
// real time (an operation that completed before another was invoked comes first), in which
// every operation's outcome is what the model allows. Operations whose outcome is unknown
// ("info") may have taken effect at any point after their invocation, or never: they return
// at the end of time, and the models allow them both ways (NondeterministicModel).

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// opInput and opOutput carry the recorded operation into the model; the times are there for
// the lease: a grant while another holds is allowed only once that holder's lease has ended.
type opInput struct {
	F       string
	Process int
	Call    int64
	LeaseNs int64
	Token   int64 // write: the token written
}

type opOutput struct {
	Outcome string // ok | fail | info
	Token   int64  // acquire ok
	Value   int64  // read ok
	Return  int64
}

// lockState is the lease-lock model's state: the holder (-1: free), its token, its reentry
// count, the earliest moment its lease can have ended (its acquire's invocation + lease: the
// server granted no earlier than that invocation), and when its grant was last known to hold
// (the acquire's completion; its invocation when the outcome is unknown).
type lockState struct {
	Holder   int
	Token    int64
	Count    int
	LeaseEnd int64
	Granted  int64
}

var free = lockState{Holder: -1}

// Reports is the servers' own account of holdings that ended, on the workers' clock: the lock
// key's keyspace `expired` (and `evicted`) events as any data node published them, and each
// process's lost-lock notices (the helper was told by the server, or found, that its holding
// is gone).
type Reports struct {
	Expired []int64         // sorted
	Lost    map[int][]int64 // per process, sorted
}

// endedBetween: a server reported between from and to that a holding of the key ended: an
// expiry on any node, or a lost-lock notice of the holder.
func (r Reports) endedBetween(holder int, from, to int64) bool {
	in := func(times []int64) bool {
		i := sort.Search(len(times), func(i int) bool { return times[i] >= from })
		return i < len(times) && times[i] <= to
	}
	return in(r.Expired) || in(r.Lost[holder])
}

// LeaseLockModel: mutual exclusion of grants under leases. A grant is allowed when the lock
// is free, re-entered by its holder, or once the holder's lease has ended: by the server's
// report (an expiry of the key, or the holder's lost-lock notice, between the holder's grant
// and the new grant's completion), or, where no server reported it (a killed or paused node
// publishes nothing), by the client-side bound: the grant completed after the earliest end of
// that lease. A release by the holder frees it (or counts a re-entry down); a release refused
// as "not held" tells the holder it lost the lock.
func LeaseLockModel(reports Reports) *porcupine.NondeterministicModel {
	m := leaseLockModel
	m.Step = func(state, input, output interface{}) []interface{} {
		return leaseLockStep(reports, state, input, output)
	}
	return &m
}

func leaseLockStep(reports Reports, state, input, output interface{}) []interface{} {
	s, in, out := state.(lockState), input.(opInput), output.(opOutput)
	switch in.F {
	case "acquire":
		granted := func(token int64) (lockState, bool) {
			end := in.Call + in.LeaseNs
			known := in.Call
			if out.Outcome == "ok" {
				known = out.Return
			}
			ended := out.Outcome == "ok" &&
				(out.Return >= s.LeaseEnd || reports.endedBetween(s.Holder, s.Granted, out.Return))
			switch {
			case s.Holder == in.Process:
				return lockState{in.Process, s.Token, s.Count + 1, max(end, s.LeaseEnd), max(known, s.Granted)}, true
			case s.Holder == -1 || ended:
				return lockState{in.Process, token, 1, end, known}, true
			case out.Outcome == "info":
				// An unknown outcome may take effect at the end of time, after any lease;
				// the earlier holder's lease end stays, so it masks no later grant.
				return lockState{in.Process, token, 1, max(end, s.LeaseEnd), max(known, s.Granted)}, true
			}
			return s, false
		}
		switch out.Outcome {
		case "ok":
			if next, ok := granted(out.Token); ok {
				return []interface{}{next}
			}
			return nil
		case "fail":
			return []interface{}{s}
		default:
			if next, ok := granted(0); ok {
				return []interface{}{s, next}
			}
			return []interface{}{s}
		}
	case "release":
		released := s
		if s.Holder == in.Process {
			released.Count--
			if released.Count == 0 {
				released = free
			}
		}
		switch out.Outcome {
		case "ok":
			if s.Holder != in.Process {
				return nil
			}
			return []interface{}{released}
		case "fail": // not held: whatever the model thought, this holder has lost it
			if s.Holder == in.Process {
				return []interface{}{free}
			}
			return []interface{}{s}
		default:
			return []interface{}{s, released}
		}
	}
	return []interface{}{s}
}

var leaseLockModel = porcupine.NondeterministicModel{
	Init:  func() []interface{} { return []interface{}{free} },
	Equal: func(a, b interface{}) bool { return a.(lockState) == b.(lockState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(opInput), output.(opOutput)
		switch {
		case in.F == "acquire" && out.Outcome == "ok":
			return fmt.Sprintf("p%d acquire -> token %d", in.Process, out.Token)
		default:
			return fmt.Sprintf("p%d %s -> %s", in.Process, in.F, out.Outcome)
		}
	},
	DescribeState: func(state interface{}) string {
		s := state.(lockState)
		if s.Holder == -1 {
			return "free"
		}
		return fmt.Sprintf("held by p%d (token %d, count %d)", s.Holder, s.Token, s.Count)
	},
}

// tokenState: the highest token granted and to whom.
type tokenState struct {
	Max     int64
	Process int
}

// TokenOrderModel: every grant's token is higher than every token granted before it (the
// same token again only to the same process: a re-entry). A linearization exists exactly
// when no grant that completed before another was invoked has the higher token.
var TokenOrderModel = porcupine.Model{
	Init: func() interface{} { return tokenState{Process: -1} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(tokenState), input.(opInput), output.(opOutput)
		if in.F != "acquire" || out.Outcome != "ok" {
			return true, s
		}
		if out.Token > s.Max || (out.Token == s.Max && in.Process == s.Process) {
			return true, tokenState{out.Token, in.Process}
		}
		return false, s
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(opInput), output.(opOutput)
		return fmt.Sprintf("p%d acquire -> token %d", in.Process, out.Token)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("highest token %d", state.(tokenState).Max) },
}

// registerState: the guarded resource's value and the highest token it accepted.
type registerState struct{ Value, Max int64 }

// FencedRegisterModel: the resource is a linearizable register that accepts a write only if
// its token is not lower than the highest accepted (and refuses it only then); reads return
// the last accepted write.
var FencedRegisterModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{registerState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(registerState), input.(opInput), output.(opOutput)
		switch in.F {
		case "write":
			accepted := in.Token >= s.Max
			next := s
			if accepted {
				next = registerState{in.Token, in.Token}
			}
			switch out.Outcome {
			case "ok":
				if !accepted {
					return nil
				}
				return []interface{}{next}
			case "fail":
				if accepted {
					return nil
				}
				return []interface{}{s}
			default:
				return []interface{}{s, next}
			}
		case "read":
			if out.Outcome == "ok" && out.Value != s.Value {
				return nil
			}
		}
		return []interface{}{s}
	},
	Equal: func(a, b interface{}) bool { return a.(registerState) == b.(registerState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(opInput), output.(opOutput)
		if in.F == "read" {
			if out.Outcome == "ok" {
				return fmt.Sprintf("p%d read -> %d", in.Process, out.Value)
			}
			return fmt.Sprintf("p%d read -> %s", in.Process, out.Outcome)
		}
		verdict := map[string]string{"ok": "accepted", "fail": "refused", "info": "unknown"}[out.Outcome]
		return fmt.Sprintf("p%d write %d -> %s", in.Process, in.Token, verdict)
	},
	DescribeState: func(state interface{}) string {
		s := state.(registerState)
		return fmt.Sprintf("value %d, highest token %d", s.Value, s.Max)
	},
}
