//go:build !race

package rabbitmq

// raceAllocs is what the race detector adds to an allocation count.
const raceAllocs = 0
