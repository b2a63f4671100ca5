package main

// The history every worker writes, one JSON object a line: an "invoke" before each operation
// and its completion after it ("ok", "fail" for a definite refusal, "info" when the outcome is
// unknown: a timeout or a broken connection). Times are CLOCK_MONOTONIC nanoseconds, one
// clock for every process on the machine (the Python worker uses time.monotonic_ns(), the
// same clock), so the histories of all workers merge into one.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Event is one line of a history.
type Event struct {
	Process int    `json:"process"`
	Session int    `json:"session"` // the worker's n-th attempt to hold the lock
	Type    string `json:"type"`    // invoke | ok | fail | info | note
	F       string `json:"f"`       // acquire | release | write | read | lost
	// Target is the resource a write or read is about: "fenced" (the resource refuses a
	// token lower than the highest it accepted) or "plain" (it takes every write).
	Target string `json:"target,omitempty"`
	Token  int64  `json:"token,omitempty"`
	// Value is what a read saw (0: the resource was never written).
	Value int64 `json:"value,omitempty"`
	// LeaseMs is the lease asked for (acquire). LeaseEnd is the lease end the client was
	// told (Unix ms, the server's clock), when the helper reports one.
	LeaseMs  int64  `json:"lease_ms,omitempty"`
	LeaseEnd int64  `json:"lease_end,omitempty"`
	Time     int64  `json:"time"`
	Error    string `json:"error,omitempty"`
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Recorder appends events to a file, one line each, flushed at once (a worker killed with
// SIGKILL leaves every line it wrote).
type Recorder struct {
	mu      sync.Mutex
	f       *os.File
	process int
}

func NewRecorder(path string, process int) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{f: f, process: process}, nil
}

func (r *Recorder) Record(e Event) {
	e.Process = r.process
	if e.Time == 0 {
		e.Time = monotonicNow()
	}
	line, _ := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(line, '\n'))
}

func (r *Recorder) Close() error { return r.f.Close() }

// ReadHistory reads every worker's file and merges them by time.
func ReadHistory(paths []string) ([]Event, error) {
	var all []Event
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		line := 0
		for sc.Scan() {
			line++
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %v", p, line, err)
			}
			all = append(all, e)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time < all[j].Time })
	return all, nil
}

// Op is an invocation paired with its completion. Return is 0 while the outcome is unknown
// (an "info" completion, or none: the worker was killed).
type Op struct {
	Process, Session int
	F, Target        string
	Call, Return     int64
	Outcome          string // ok | fail | info
	Token            int64  // acquire ok: received; write: the token written
	Value            int64  // read ok: what was seen
	LeaseMs          int64
	LeaseEnd         int64
	Error            string
}

// Pair turns a merged history into operations. Each worker runs one operation at a time, so
// an invoke is completed by its process's next completion.
func Pair(events []Event) ([]Op, []Event, error) {
	open := map[int]*Op{}
	var ops []Op
	var notes []Event
	for _, e := range events {
		switch e.Type {
		case "invoke":
			if open[e.Process] != nil {
				return nil, nil, fmt.Errorf("process %d invoked %s before its %s completed", e.Process, e.F, open[e.Process].F)
			}
			open[e.Process] = &Op{Process: e.Process, Session: e.Session, F: e.F, Target: e.Target, Call: e.Time, Token: e.Token, LeaseMs: e.LeaseMs}
		case "ok", "fail", "info":
			op := open[e.Process]
			if op == nil || op.F != e.F {
				return nil, nil, fmt.Errorf("process %d completed %s with no such invocation open", e.Process, e.F)
			}
			delete(open, e.Process)
			op.Outcome, op.Error = e.Type, e.Error
			if e.Type != "info" {
				op.Return = e.Time
			}
			if e.Token != 0 {
				op.Token = e.Token
			}
			op.Value, op.LeaseEnd = e.Value, e.LeaseEnd
			ops = append(ops, *op)
		case "note":
			notes = append(notes, e)
		default:
			return nil, nil, fmt.Errorf("unknown event type %q", e.Type)
		}
	}
	for _, op := range open { // the worker died mid-operation: its outcome is unknown
		op.Outcome = "info"
		ops = append(ops, *op)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops, notes, nil
}
