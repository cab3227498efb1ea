package saga

import (
	"fmt"
	"strings"
)

// Outcome is how a run ended.
type Outcome int

const (
	// Completed: every step's Do succeeded.
	Completed Outcome = iota
	// Compensated: a step failed and every completed step with an Undo was
	// undone.
	Compensated
	// Unresolved: a step failed and at least one Undo failed too; those
	// effects happened, were meant to be undone, and were not.
	Unresolved
)

// String names the outcome for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case Completed:
		return "completed"
	case Compensated:
		return "compensated"
	case Unresolved:
		return "unresolved"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// UndoFailure is a completed step whose Undo failed.
type UndoFailure struct {
	Step string
	Err  error
}

// Error says which step could not be undone and why.
func (u UndoFailure) Error() string {
	return fmt.Sprintf("step %q was not undone: %v", u.Step, u.Err)
}

// Unwrap returns the undo's error.
func (u UndoFailure) Unwrap() error { return u.Err }

// Result is what a run did. Run returns it instead of an error.
type Result struct {
	// Saga is the saga's name.
	Saga string
	// Completed names the steps whose Do succeeded, in order.
	Completed []string
	// Failed names the step that failed (or that was not started because
	// the context was done); empty when the saga completed.
	Failed string
	// Err is why Failed failed; nil when the saga completed.
	Err error
	// Compensated names the steps undone, in the order they were undone
	// (reverse).
	Compensated []string
	// Skipped names the completed steps that had no Undo, in reverse order.
	Skipped []string
	// Unresolved lists the completed steps whose Undo failed, in the order
	// tried. It is the list to alert on: nothing else knows about these
	// effects and no retry resolves them; a person has to.
	Unresolved []UndoFailure
}

// Outcome says how the run ended.
func (r Result) Outcome() Outcome {
	switch {
	case r.Err == nil:
		return Completed
	case len(r.Unresolved) > 0:
		return Unresolved
	}
	return Compensated
}

// OK reports whether every step completed.
func (r Result) OK() bool { return r.Err == nil }

// HasUnresolved reports whether an Undo failed.
func (r Result) HasUnresolved() bool { return len(r.Unresolved) > 0 }

// String summarises the run for a log line.
func (r Result) String() string {
	switch r.Outcome() {
	case Completed:
		return fmt.Sprintf("saga %q completed: %s", r.Saga, strings.Join(r.Completed, ", "))
	case Compensated:
		return fmt.Sprintf("%v; compensated: %s", r.Err, strings.Join(r.Compensated, ", "))
	}
	var steps []string
	for _, u := range r.Unresolved {
		steps = append(steps, u.Step)
	}
	return fmt.Sprintf("%v; compensated: %s; NOT undone: %s", r.Err, strings.Join(r.Compensated, ", "), strings.Join(steps, ", "))
}
