package rlock

// Family is the kind of holding a call takes, with its command set (RLOCK, RWLOCK, RSEM,
// RLATCH) and the type its NOTIFY messages name. Every lock type is a handle on one Family.
type Family int

const (
	familyLock Family = iota
	familyRead
	familyWrite
	familyPermits
	familyLatch
)

func (k Family) messageType() string {
	return [...]string{"lock", "read", "write", "permits", "latch"}[k]
}

func (k Family) family() string {
	return [...]string{"RLOCK", "RWLOCK", "RWLOCK", "RSEM", "RLATCH"}[k]
}

// acquireName and releaseName are the family's ACQUIRE and RELEASE commands (constants: no
// string built per call).
func (k Family) acquireName() string {
	return [...]string{"RLOCK.ACQUIRE", "RWLOCK.ACQUIRE", "RWLOCK.ACQUIRE", "RSEM.ACQUIRE", "RLATCH.ACQUIRE"}[k]
}

func (k Family) releaseName() string {
	return [...]string{"RLOCK.RELEASE", "RWLOCK.RELEASE", "RWLOCK.RELEASE", "RSEM.RELEASE", "RLATCH.RELEASE"}[k]
}
