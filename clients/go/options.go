package rlock

import "time"

// settings are what every lock type's options set.
type settings struct {
	lease     time.Duration
	watchdog  bool
	wait      time.Duration
	maxHold   time.Duration
	lockDelay time.Duration
	owner     string
	onLost    func(key string, token int64)
}

const defaultLease = 30 * time.Second

func (c *Client) settings(opts []Option) settings {
	s := settings{lease: defaultLease, watchdog: true}
	for _, o := range opts {
		o(&s)
	}
	if s.owner == "" {
		s.owner = c.newOwner()
	}
	return s
}

// Option configures a lock (Mutex, RWMutex, Semaphore, MultiLock, Election).
type Option func(*settings)

// WithExpiry holds with a plain lease of d that Extend renews, instead of the server's
// watchdog (redsync's expiry; its lost-lock risk is yours).
func WithExpiry(d time.Duration) Option {
	return func(s *settings) { s.lease, s.watchdog = d, false }
}

// WithLease sets the lease that the server's watchdog renews (default 30 s): how long a
// holding outlives a connection that went quiet.
func WithLease(d time.Duration) Option { return func(s *settings) { s.lease = d } }

// WithWait bounds how long Lock (Acquire, Campaign) waits in the queue; default: until the
// context ends.
func WithWait(d time.Duration) Option { return func(s *settings) { s.wait = d } }

// WithMaxHold caps every holding at its grant time + d, however it is renewed (MAXHOLD).
func WithMaxHold(d time.Duration) Option { return func(s *settings) { s.maxHold = d } }

// WithLockDelay keeps a lock granted to nobody for d after its holding ended other than by
// its owner's release (LOCKDELAY; Mutex and MultiLock only).
func WithLockDelay(d time.Duration) Option { return func(s *settings) { s.lockDelay = d } }

// WithValue sets the owner id (redsync's value). Locks given the same value are one owner:
// they re-enter each other's holdings, and the server sees the cycles among them.
func WithValue(owner string) Option { return func(s *settings) { s.owner = owner } }

// WithOnLost calls f (on its own goroutine) when the client learns that a holding ended
// other than by its owner's release.
func WithOnLost(f func(key string, token int64)) Option {
	return func(s *settings) { s.onLost = f }
}
