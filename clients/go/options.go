package rlock

import (
	"errors"
	"fmt"
	"time"
)

// settings are what every lock type's options set.
type settings struct {
	lease     time.Duration
	watchdog  bool
	wait      time.Duration
	maxHold   time.Duration
	lockDelay time.Duration
	owner     string
	onLost    func(key string, token int64)
	// redsync's: a wait bounded by tries × delay, Until's drift, Extend's SET NX.
	tries         int
	retryDelay    func(try int) time.Duration
	driftFactor   float64
	setNXOnExtend bool
	genValue      func() (string, error)
	// err is the first bad option: every call of the lock returns it, and nothing is sent.
	err error
}

const defaultLease = 30 * time.Second

func (c *Client) settings(opts []Option) settings {
	s := settings{lease: defaultLease, watchdog: true, driftFactor: 0}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if s.err == nil && s.owner == "" && s.genValue != nil {
		v, err := s.genValue()
		switch {
		case err != nil:
			s.err = fmt.Errorf("rlock: WithGenValueFunc: %w", err)
		case v == "":
			s.err = errors.New("rlock: WithGenValueFunc gave an empty value")
		}
		s.owner = v
	}
	if s.owner == "" {
		s.owner = c.newOwner()
	}
	if s.err == nil && s.tries > 0 && s.wait == 0 {
		// redsync's bound: tries attempts with its delays in between; 1 try waits not at all.
		for i := 1; i < s.tries; i++ {
			s.wait += s.delay(i)
		}
		if s.tries == 1 {
			s.wait = -1
		}
	}
	return s
}

func (s *settings) delay(try int) time.Duration {
	if s.retryDelay != nil {
		return s.retryDelay(try)
	}
	return 150 * time.Millisecond // redsync's rand(50 ms, 250 ms), on average
}

// Option configures a lock (Mutex, RWMutex, Semaphore, MultiLock, Election). The names are
// redsync v4's where it has one.
type Option func(*settings)

func (s *settings) refuse(format string, args ...interface{}) {
	if s.err == nil {
		s.err = fmt.Errorf("rlock: "+format, args...)
	}
}

// WithExpiry holds with a plain lease of d that Extend renews, instead of the server's
// watchdog (redsync's expiry; its lost-lock risk is yours).
func WithExpiry(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.refuse("WithExpiry needs a positive duration, got %v", d)
		}
		s.lease, s.watchdog = d, false
	}
}

// WithLease sets the lease that the server's watchdog renews (default 30 s): how long a
// holding outlives a connection that went quiet.
func WithLease(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.refuse("WithLease needs a positive duration, got %v", d)
		}
		s.lease = d
	}
}

// WithWait bounds how long Lock (Acquire, Campaign) waits in the queue (ErrFailed after it);
// default: until the context ends.
func WithWait(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.refuse("WithWait needs a duration of 0 or more, got %v", d)
		}
		s.wait = d
	}
}

// WithTries is redsync's bound on Lock: here the wait in the queue lasts as long as redsync's
// tries would (the sum of the retry delays between them); WithTries(1) does not wait.
func WithTries(n int) Option {
	return func(s *settings) {
		if n < 1 {
			s.refuse("WithTries needs 1 or more, got %d", n)
		}
		s.tries = n
	}
}

// WithRetryDelay is redsync's delay between tries: with WithTries it sets how long Lock waits.
func WithRetryDelay(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.refuse("WithRetryDelay needs a duration of 0 or more, got %v", d)
		}
		s.retryDelay = func(int) time.Duration { return d }
	}
}

// DelayFunc is redsync's retry delay by try number.
type DelayFunc func(tries int) time.Duration

// WithRetryDelayFunc is redsync's delay function: with WithTries it sets how long Lock waits.
func WithRetryDelayFunc(f DelayFunc) Option {
	return func(s *settings) {
		if f == nil {
			s.refuse("WithRetryDelayFunc needs a function, got nil")
		}
		s.retryDelay = f
	}
}

// WithDriftFactor is redsync's allowance for clock drift: Until ends earlier by expiry ×
// factor + 2 ms (WithExpiry locks; default 0.01 as redsync's).
func WithDriftFactor(f float64) Option {
	return func(s *settings) {
		if f < 0 || f >= 1 {
			s.refuse("WithDriftFactor needs a factor in [0, 1), got %v", f)
		}
		s.driftFactor = f
	}
}

// WithTimeoutFactor is accepted for redsync's sake and does nothing: a call here waits for
// one server, not a quorum of several.
func WithTimeoutFactor(f float64) Option {
	return func(s *settings) {
		if f < 0 {
			s.refuse("WithTimeoutFactor needs a factor of 0 or more, got %v", f)
		}
	}
}

// WithFailFast and WithShufflePools are accepted for redsync's sake and do nothing: there is
// one server (with its replicas), not several pools.
func WithFailFast(bool) Option     { return func(*settings) {} }
func WithShufflePools(bool) Option { return func(*settings) {} }

// WithSetNXOnExtend is redsync's: Extend of a lock that is no longer held takes it again if it
// is free.
func WithSetNXOnExtend() Option { return func(s *settings) { s.setNXOnExtend = true } }

// WithGenValueFunc makes the owner id (redsync's value) with f, once per lock.
func WithGenValueFunc(f func() (string, error)) Option {
	return func(s *settings) {
		if f == nil {
			s.refuse("WithGenValueFunc needs a function, got nil")
		}
		s.genValue = f
	}
}

// WithMaxHold caps every holding at its grant time + d, however it is renewed (MAXHOLD).
func WithMaxHold(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.refuse("WithMaxHold needs a duration of 0 or more, got %v", d)
		}
		s.maxHold = d
	}
}

// WithLockDelay keeps a lock granted to nobody for d after its holding ended other than by
// its owner's release (LOCKDELAY; Mutex and MultiLock only).
func WithLockDelay(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.refuse("WithLockDelay needs a duration of 0 or more, got %v", d)
		}
		s.lockDelay = d
	}
}

// WithValue sets the owner id (redsync's value). Locks given the same value are one owner:
// they re-enter each other's holdings, and the server sees the cycles among them.
func WithValue(owner string) Option {
	return func(s *settings) {
		if owner == "" {
			s.refuse("WithValue needs a non-empty value")
		}
		s.owner = owner
	}
}

// WithOnLost calls f (on its own goroutine) when the client learns that a holding ended
// other than by its owner's release.
func WithOnLost(f func(key string, token int64)) Option {
	return func(s *settings) { s.onLost = f }
}
