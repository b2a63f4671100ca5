package rlock

// The Go runner's table of clients/spec actor ops (spec_test.go runs the rest): each op as
// calls of the package's public API, and the error kinds.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// specKind is the spec's error kind of an error the package returned ("": none, the step
// fails with the error's text).
func specKind(err error) string {
	switch {
	case errors.Is(err, ErrFailed):
		return "NotAcquired"
	case errors.Is(err, ErrNotHeld):
		return "NotHeld"
	case errors.Is(err, ErrDeadlock):
		return "Deadlock"
	case errors.Is(err, ErrWrongType):
		return "WrongType"
	case errors.Is(err, ErrNotConfirmed):
		return "NotConfirmed"
	case strings.Contains(err.Error(), "an upgrade would wait for itself"):
		return "UpgradeRefused" // the server's refusal; the package has no error value for it
	}
	return ""
}

// specActor is one owner: a client of its own as its ACL user (one more per confirm setting),
// its owner id given to every handle (WithValue), a handle per (type, key, wait) kept for the
// scenario, and what it holds through which handle.
type specActor struct {
	addr, user, owner string

	mu        sync.Mutex
	clients   map[string]*Client     // by confirm setting ("": the default)
	options   map[string][]Option    // by place (family and key): fixed by its first step
	placed    map[string]*Client     // by place: the client of the confirm its first step named
	handles   map[string]interface{} // by place and wait
	held      map[string][]interface{}
	elections map[string]*Election
}

func newSpecActor(addr, user string) *specActor {
	return &specActor{addr: addr, user: user, owner: user + ":owner",
		clients: map[string]*Client{}, options: map[string][]Option{}, placed: map[string]*Client{},
		handles: map[string]interface{}{}, held: map[string][]interface{}{}, elections: map[string]*Election{}}
}

func (a *specActor) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.clients {
		c.Close()
	}
}

// client is the actor's client for a confirm setting (a property of Options in Go); a.mu held.
func (a *specActor) client(confirm map[string]interface{}) *Client {
	name := ""
	opts := testOptions{Addr: a.addr, Username: a.user, Password: "spec"}
	if confirm != nil {
		name = jsonText(confirm)
		opts.Confirm = Confirm{Mode: ConfirmReplicas, Replicas: int(num(confirm, "replicas")),
			Timeout: time.Duration(num(confirm, "timeout_ms")) * time.Millisecond}
	}
	if a.clients[name] == nil {
		a.clients[name] = newTestClient(opts)
	}
	return a.clients[name]
}

// place is where a step's handle and holdings are: the family (the two sides of a read-write
// lock share one handle) and the key (keys, for a multilock).
func place(family string, step map[string]interface{}) string {
	if family == "multilock" {
		return family + "\x00" + strings.Join(stringList(step["keys"]), "\n")
	}
	return family + "\x00" + str(step, "key")
}

// handle is the actor's handle of family for the step: one per (place, wait_ms), all with the
// actor's owner id and the lease and confirmation the place's first step named.
func (a *specActor) handle(family string, step map[string]interface{}) interface{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	at := place(family, step)
	if _, ok := a.options[at]; !ok {
		opts := []Option{WithValue(a.owner)}
		if lease, ok := step["lease_ms"].(int64); ok {
			opts = append(opts, WithExpiry(time.Duration(lease)*time.Millisecond))
		}
		a.options[at] = opts
		confirm, _ := step["confirm"].(map[string]interface{})
		a.placed[at] = a.client(confirm)
	}
	wait, waits := step["wait_ms"].(int64)
	name := fmt.Sprintf("%s\x00%d", at, wait)
	if made := a.handles[name]; made != nil {
		return made
	}
	opts := a.options[at]
	if waits {
		opts = append(opts[:len(opts):len(opts)], WithWait(time.Duration(wait)*time.Millisecond))
	}
	c := a.placed[at]
	var made interface{}
	switch family {
	case "lock":
		made = c.NewMutex(str(step, "key"), opts...)
	case "rwlock":
		made = c.NewRWMutex(str(step, "key"), opts...)
	case "semaphore":
		made = c.NewSemaphore(str(step, "key"), opts...)
	case "multilock":
		made = c.NewMultiLock(stringList(step["keys"]), opts...)
	}
	a.handles[name] = made
	return made
}

// push records the handle an acquisition went through; top and pop find it for the release,
// guard and await_lost (the place's handle without a wait when nothing is held: the server
// then says what a release by a non-owner does).
func (a *specActor) push(kind string, step map[string]interface{}, h interface{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at := place(kind, step)
	a.held[at] = append(a.held[at], h)
}

func (a *specActor) top(kind, family string, step map[string]interface{}, pop bool) interface{} {
	a.mu.Lock()
	at := place(kind, step)
	stack := a.held[at]
	if len(stack) > 0 {
		h := stack[len(stack)-1]
		if pop {
			a.held[at] = stack[:len(stack)-1]
		}
		a.mu.Unlock()
		return h
	}
	a.mu.Unlock()
	return a.handle(family, map[string]interface{}{"key": step["key"], "keys": step["keys"]})
}

func (a *specActor) election(key string) *Election {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.elections[key] == nil {
		a.elections[key] = a.client(nil).NewElection(key)
	}
	return a.elections[key]
}

func (a *specActor) latch(key string) *CountDownLatch {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client(nil).NewCountDownLatch(key)
}

func family(kind string) string {
	if kind == "read" || kind == "write" {
		return "rwlock"
	}
	return kind
}

// bounded is ctx bounded by the step's wait_ms, for the calls whose only bound is their
// context (Campaign, CountDownLatch.Wait); ranOut says whether that bound ended it.
func bounded(ctx context.Context, step map[string]interface{}) (context.Context, context.CancelFunc, func() bool) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, time.Duration(num(step, "wait_ms"))*time.Millisecond)
	return ctx, cancel, func() bool { return ctx.Err() == context.DeadlineExceeded && parent.Err() == nil }
}

// run runs an actor op: its result, error kind, or failure.
func (a *specActor) run(ctx context.Context, step map[string]interface{}) specOutcome {
	result, err := a.op(ctx, step)
	if err == nil {
		return specOutcome{result: result}
	}
	if kind := specKind(err); kind != "" {
		return specOutcome{kind: kind}
	}
	return specOutcome{failure: err}
}

func (a *specActor) op(ctx context.Context, step map[string]interface{}) (interface{}, error) {
	kind := str(step, "type")
	_, waits := step["wait_ms"]
	switch op := str(step, "op"); op {
	case "acquire":
		h := a.handle(family(kind), step)
		token, err := acquire(ctx, kind, h, waits, num(step, "permits"))
		if err == nil {
			a.push(kind, step, h)
		}
		return token, err
	case "release":
		h := a.top(kind, family(kind), step, true)
		switch h := h.(type) {
		case *Mutex:
			_, err := h.UnlockContext(ctx)
			return nil, err
		case *RWMutex:
			if kind == "read" {
				return nil, h.RUnlockContext(ctx)
			}
			return nil, h.UnlockContext(ctx)
		case *Semaphore:
			return nil, h.ReleaseContext(ctx, numOr(step, "permits", 1))
		}
	case "guard":
		return a.top("lock", "lock", step, false).(*Mutex).Guard(ctx, stringList(step["command"])...)
	case "await_lost":
		return nil, a.awaitLost(step)
	case "acquire_all":
		m := a.handle("multilock", step).(*MultiLock)
		var err error
		if waits {
			err = m.Lock(ctx)
		} else {
			err = m.TryLock(ctx)
		}
		if err != nil {
			return nil, err
		}
		a.push("multilock", step, m)
		var tokens []interface{}
		for _, t := range m.Tokens() {
			tokens = append(tokens, t)
		}
		return tokens, nil
	case "release_all":
		return nil, a.top("multilock", "multilock", step, true).(*MultiLock).Unlock(ctx)
	case "campaign":
		e := a.election(str(step, "key"))
		ctx, cancel, ranOut := bounded(ctx, step)
		defer cancel()
		if err := e.Campaign(ctx, str(step, "candidate")); err != nil {
			if ranOut() {
				return nil, ErrFailed
			}
			return nil, err
		}
		return e.Term(), nil
	case "leader":
		info, err := a.election(str(step, "key")).Leader(ctx)
		if errors.Is(err, ErrNoLeader) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return map[string]interface{}{"owner": info.Candidate, "term": info.Term}, nil
	case "resign":
		return nil, a.election(str(step, "key")).Resign(ctx)
	case "set_permits", "add_permits", "available_permits":
		s := a.handle("semaphore", step).(*Semaphore)
		switch op {
		case "set_permits":
			return s.TrySetPermits(ctx, num(step, "permits"))
		case "add_permits":
			return s.AddPermits(ctx, num(step, "permits"))
		}
		return s.Available(ctx)
	case "set_count", "count_down", "get_count", "await_latch":
		l := a.latch(str(step, "key"))
		switch op {
		case "set_count":
			return l.TrySetCount(ctx, num(step, "count"))
		case "count_down":
			_, err := l.CountDown(ctx)
			return nil, err
		case "get_count":
			return l.Count(ctx)
		}
		ctx, cancel, ranOut := bounded(ctx, step)
		defer cancel()
		err := l.Wait(ctx)
		if err != nil && ranOut() {
			return false, nil
		}
		return err == nil, err
	default:
		return nil, fmt.Errorf("the Go runner has no actor op %q", op)
	}
	return nil, fmt.Errorf("the Go runner cannot %s a %q", str(step, "op"), kind)
}

// acquire takes the step's kind through its handle: waiting (WithWait bounds it) or one try.
func acquire(ctx context.Context, kind string, h interface{}, wait bool, permits int64) (interface{}, error) {
	var err error
	switch h := h.(type) {
	case *Mutex:
		if wait {
			err = h.LockContext(ctx)
		} else {
			err = h.TryLockContext(ctx)
		}
		return h.Token(), err
	case *RWMutex:
		switch {
		case kind == "read" && wait:
			err = h.RLockContext(ctx)
		case kind == "read":
			err = h.TryRLock()
		case wait:
			err = h.LockContext(ctx)
		default:
			err = h.TryLock()
		}
		if kind == "read" {
			return h.RToken(), err
		}
		return h.Token(), err
	case *Semaphore:
		if permits == 0 {
			permits = 1
		}
		if wait {
			err = h.Acquire(ctx, permits)
		} else {
			err = h.TryAcquireContext(ctx, permits)
		}
		return h.Token(), err
	}
	return nil, fmt.Errorf("the Go runner cannot acquire a %q", kind)
}

// awaitLost waits for the lost-lock notice of what the actor holds (Lost(), RLost()).
func (a *specActor) awaitLost(step map[string]interface{}) error {
	kind := str(step, "type")
	var lost <-chan struct{}
	if kind == "election" {
		e := a.election(str(step, "key"))
		if e.Term() == 0 { // Lost() is closed at once when it does not lead
			return errors.New("await_lost: the actor does not lead there")
		}
		lost = e.Lost()
	} else {
		a.mu.Lock()
		held := len(a.held[place(kind, step)])
		a.mu.Unlock()
		if held == 0 { // Lost() is closed at once when nothing is held
			return errors.New("await_lost: the actor holds nothing there")
		}
		switch h := a.top(kind, family(kind), step, false).(type) {
		case *Mutex:
			lost = h.Lost()
		case *RWMutex:
			lost = h.Lost()
			if kind == "read" {
				lost = h.RLost()
			}
		case *Semaphore:
			lost = h.Lost()
		default:
			return fmt.Errorf("the Go %T has no lost-lock notice", h)
		}
	}
	select {
	case <-lost:
		return nil
	case <-time.After(time.Duration(numOr(step, "within_ms", specAwaitDefaultMS)) * time.Millisecond):
		return errors.New("the holding was not reported lost")
	}
}
