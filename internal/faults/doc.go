// Package faults holds the fault suite: integration tests that run the library
// against the real local broker and database while they are disturbed
// (connections closed, the broker stopped, a memory alarm raised, MariaDB
// restarted or stopped for a while, poison messages among good ones), give
// every message a unique id and count, at the end, what was lost (sent and
// confirmed but never handled), what was duplicated (handled more than once)
// and, where the settlement decorator runs, what was set aside where.
//
// The package has no code of its own; run it with
//
//	go test -race -count=1 -run Fault -v ./internal/faults/ -faults.full
//
// Without -faults.full the scenarios run in a short form sized for make test.
// doc/reliability.md describes each scenario and records the figures of a full
// run.
package faults
