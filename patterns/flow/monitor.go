package flow

import (
	"context"
	"time"
)

// Run outcomes a RunObserver and a Monitor hear.
const (
	// OutcomeCompleted: the last step of the run was done.
	OutcomeCompleted = "completed"
	// OutcomeEndedEarly: a step chose not to go on (it returned false).
	OutcomeEndedEarly = "ended_early"
)

// RunFinished reports a run that finished or ended early at a named step:
// the AceMQ family's pipeline.run_finished event.
type RunFinished struct {
	// Pipeline and Step name where the run finished (InPipeline, AtStep,
	// AlongRoute, or the pipeline's own names).
	Pipeline string
	Step     string
	// Outcome is OutcomeCompleted or OutcomeEndedEarly.
	Outcome string
	// RunID is the declared route's run id; empty in the JSON slip form and
	// for Then.
	RunID string
	// MessageID and CorrelationID are the last message's.
	MessageID     string
	CorrelationID string
	// Age is how long the run took: the time since the last message's
	// FirstSeen, which every hop carries on from the first message.
	Age time.Duration
}

// RunObserver hears every run that finishes under a context it is
// installed on (WithRunObserver); a tracing adapter installs one to write
// the run_finished span event. It must not block.
type RunObserver interface {
	RunFinished(ctx context.Context, run RunFinished)
}

// RunObserverFunc adapts a function to RunObserver.
type RunObserverFunc func(ctx context.Context, run RunFinished)

// RunFinished calls f.
func (f RunObserverFunc) RunFinished(ctx context.Context, run RunFinished) { f(ctx, run) }

type observerKey struct{}

// WithRunObserver returns a context whose handlers report finished runs to
// observer, besides their Monitor.
func WithRunObserver(ctx context.Context, observer RunObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, observer)
}

// RunObserverFrom returns the context's RunObserver, or nil.
func RunObserverFrom(ctx context.Context) RunObserver {
	observer, _ := ctx.Value(observerKey{}).(RunObserver)
	return observer
}

// Monitor receives one call per message and outcome. pipeline and step are
// the handler's names (empty when it was given none).
type Monitor interface {
	// Forwarded: the next message was published, confirmed and routed.
	Forwarded(pipeline, step string)
	// ForwardFailed: the next message did not go out; the input is retried.
	ForwardFailed(pipeline, step string, err error)
	// StepFailed: the step returned an error (or panicked); the input is
	// retried, or dead-lettered when the error is fatal.
	StepFailed(pipeline, step string, err error)
	// Refused: the input cannot be handled (no slip, an unreadable one, a
	// declared route without AlongRoute, a body that does not decode) and
	// was set aside.
	Refused(pipeline, step string, err error)
	// RunFinished: a named run completed or ended early.
	RunFinished(run RunFinished)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

func (NopMonitor) Forwarded(string, string)            {}
func (NopMonitor) ForwardFailed(string, string, error) {}
func (NopMonitor) StepFailed(string, string, error)    {}
func (NopMonitor) Refused(string, string, error)       {}
func (NopMonitor) RunFinished(RunFinished)             {}
