package rlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrFailed matches every "not granted": held by someone else, or the wait you asked for
	// (WithWait, WithTries) ran out; the error itself is an *ErrTaken, as redsync's last try
	// returns. A context that ends returns ctx.Err() instead. (redsync's name.)
	ErrFailed = errors.New("rlock: not acquired")
	// ErrExtendFailed is Extend's error when the lock is no longer held (it also matches
	// ErrNotHeld). (redsync's name.)
	ErrExtendFailed = errors.New("rlock: failed to extend lock")
	// ErrNotHeld is returned by a release, extend or guarded write when the caller no longer
	// holds what it asked for (its lease ended, it was force-released, or it never held it).
	ErrNotHeld = errors.New("rlock: not held")
	// ErrLost is what a lost-lock notice carries: the holding ended other than by its owner.
	ErrLost = errors.New("rlock: lock lost")
	// ErrDeadlock matches every *DeadlockError with errors.Is.
	ErrDeadlock = errors.New("rlock: deadlock")
	// ErrCrossSlot matches every *CrossSlotError with errors.Is.
	ErrCrossSlot = errors.New("rlock: keys in different hash slots")
	// ErrNotConfirmed matches every *NotConfirmedError with errors.Is.
	ErrNotConfirmed = errors.New("rlock: not confirmed by the replicas")
	// ErrWrongType is the server's WRONGTYPE: the key holds another kind of lock or value.
	ErrWrongType = errors.New("rlock: the key holds another kind of value")
)

// ErrTaken is a lock (or permits) not granted: held by someone else, or the wait ran out.
// Nodes is redsync's list of the servers that had it taken: here always []int{0}, the one
// server. It matches ErrFailed with errors.Is.
type ErrTaken struct {
	Nodes []int
}

func (e *ErrTaken) Error() string {
	return fmt.Sprintf("rlock: lock already taken, locked nodes: %v", e.Nodes)
}
func (e *ErrTaken) Is(target error) bool { return target == ErrFailed }

func notGranted() error { return &ErrTaken{Nodes: []int{0}} }

// DeadlockError is the server's refusal of a wait that would close a cycle of owners; the
// refused call was not queued, so the caller can release what it holds and try again.
type DeadlockError struct {
	// Cycle is the server's description, e.g. "o2 waits for a held by o1; o1 waits for b held by o2".
	Cycle string
}

func (e *DeadlockError) Error() string        { return "rlock: deadlock: " + e.Cycle }
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// CrossSlotError is a request for several keys that Redis Cluster would put on different
// nodes.
type CrossSlotError struct{ Keys []string }

func (e *CrossSlotError) Error() string {
	return fmt.Sprintf("rlock: keys %q are in different hash slots: put the keys in one hash slot with a hash tag, e.g. {order}:1 {order}:2", e.Keys)
}
func (e *CrossSlotError) Is(target error) bool { return target == ErrCrossSlot }

// NotConfirmedError is a write that fewer replicas than required acknowledged in time. An
// acquisition that was not confirmed has been undone; a release or count-down stands on the
// primary.
type NotConfirmedError struct {
	Confirmed, Required int
	Timeout             time.Duration
	// Undone: the acquisition was released again; otherwise the write stands on the primary.
	Undone bool
	// AOF: ConfirmAOF, and the primary's own AOF did not have the write in time.
	AOF bool
}

func (e *NotConfirmedError) Error() string {
	what := "the write stands on the primary"
	if e.Undone {
		what = "the acquisition was undone"
	}
	aof := ""
	if e.AOF {
		aof = ", not in the primary's AOF"
	}
	return fmt.Sprintf("rlock: confirmed by %d of %d replicas%s within %v (%s)", e.Confirmed, e.Required, aof, e.Timeout, what)
}
func (e *NotConfirmedError) Is(target error) bool { return target == ErrNotConfirmed }

// fromServer turns the error replies that mean something to a caller into Go error values.
func fromServer(err error, keys []string) error {
	var se *serverError
	if !errors.As(err, &se) {
		return err
	}
	switch se.code() {
	case "DEADLOCK":
		return &DeadlockError{Cycle: strings.TrimPrefix(strings.TrimPrefix(se.msg, "DEADLOCK "), "this wait would close a cycle: ")}
	case "CROSSSLOT":
		return &CrossSlotError{Keys: keys}
	case "WRONGTYPE":
		return fmt.Errorf("%w: %s", ErrWrongType, se.msg)
	case "NOTOWNER":
		return fmt.Errorf("%w: %s", ErrNotHeld, se.msg)
	}
	return fmt.Errorf("rlock: %s", se.msg)
}
