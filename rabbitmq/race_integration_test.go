//go:build race

package rabbitmq_test

// raceEnabled is true under the race detector, which slows the client's CPU work
// several times over but not the broker's round trip.
const raceEnabled = true
