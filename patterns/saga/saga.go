package saga

import (
	"context"
	"errors"
	"fmt"
)

// Step is one piece of a saga's work: Do changes the world and Undo
// compensates for it. Undo is optional; a step that changed something needs
// one, which is the argument for writing Undo first.
type Step[T any] struct {
	// Name identifies the step in a Result; unique within a saga.
	Name string
	// Do performs the step. An error or a panic fails it.
	Do func(ctx context.Context, v T) error
	// Undo compensates for a completed Do; nil is skipped.
	Undo func(ctx context.Context, v T) error
}

// Saga runs its steps in order and, when one fails, undoes the completed
// ones in reverse. It holds no state between runs and is safe for concurrent
// use when its steps are.
type Saga[T any] struct {
	name    string
	steps   []Step[T]
	monitor Monitor
}

// ErrInvalidSaga reports a saga New refuses: no name, no steps, a step
// without a name or a Do, or two steps of one name.
var ErrInvalidSaga = errors.New("saga: invalid definition")

// New returns a saga of steps, run in the order given. The error, matching
// ErrInvalidSaga, says what is missing.
func New[T any](name string, steps []Step[T], options ...Option) (*Saga[T], error) {
	if name == "" {
		return nil, fmt.Errorf("%w: a saga needs a name", ErrInvalidSaga)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%w: saga %q has no steps", ErrInvalidSaga, name)
	}
	seen := map[string]bool{}
	for i, step := range steps {
		switch {
		case step.Name == "":
			return nil, fmt.Errorf("%w: step %d of saga %q has no name", ErrInvalidSaga, i+1, name)
		case step.Do == nil:
			return nil, fmt.Errorf("%w: step %q of saga %q has no Do", ErrInvalidSaga, step.Name, name)
		case seen[step.Name]:
			return nil, fmt.Errorf("%w: saga %q has two steps named %q", ErrInvalidSaga, name, step.Name)
		}
		seen[step.Name] = true
	}
	c := newConfig(options)
	return &Saga[T]{name: name, steps: append([]Step[T](nil), steps...), monitor: c.monitor}, nil
}

// Name returns the saga's name.
func (s *Saga[T]) Name() string { return s.name }

// Run runs the steps in order with v. When a step fails (an error, a panic,
// or ctx done before it starts), the steps that completed are undone in
// reverse order, each with ctx, and an undo that fails does not stop the
// others. Run returns the outcome; a failed saga is not an error to its
// caller, who decides what happens next.
//
// The compensations get ctx as it is. If the failure you expect is a
// cancellation, run the saga with context.WithoutCancel(ctx) and bound the
// steps yourself, or every compensation sees a cancelled context and lands in
// Unresolved.
func (s *Saga[T]) Run(ctx context.Context, v T) Result {
	result := Result{Saga: s.name}
	done := 0
	for _, step := range s.steps {
		if err := ctx.Err(); err != nil {
			result.Failed = step.Name
			result.Err = fmt.Errorf("saga %q stopped before step %q: %w", s.name, step.Name, err)
			break
		}
		if err := call(ctx, step.Do, v); err != nil {
			result.Failed = step.Name
			result.Err = fmt.Errorf("saga %q: step %q failed: %w", s.name, step.Name, err)
			break
		}
		result.Completed = append(result.Completed, step.Name)
		done++
	}
	if result.Err == nil {
		s.monitor.Finished(s.name, Completed)
		return result
	}
	for i := done - 1; i >= 0; i-- {
		step := s.steps[i]
		if step.Undo == nil {
			result.Skipped = append(result.Skipped, step.Name)
			continue
		}
		if err := call(ctx, step.Undo, v); err != nil {
			result.Unresolved = append(result.Unresolved, UndoFailure{Step: step.Name, Err: err})
			s.monitor.UndoFailed(s.name, step.Name, err)
			continue
		}
		result.Compensated = append(result.Compensated, step.Name)
	}
	s.monitor.Finished(s.name, result.Outcome())
	return result
}

// call runs fn, turning a panic into an error: a panicking step is a failed
// step, and unwinding past the compensations is what a saga exists to
// prevent.
func call[T any](ctx context.Context, fn func(context.Context, T) error, v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("panicked: %w", e)
				return
			}
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return fn(ctx, v)
}
