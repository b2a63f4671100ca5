//go:build race

package rlock

// raceAllocs are the allocations per uncontended pair that the race detector adds.
const raceAllocs = 2
