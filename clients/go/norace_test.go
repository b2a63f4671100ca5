//go:build !race

package rlock

// raceAllocs: none without the race detector.
const raceAllocs = 0
