package saga

// Monitor receives one call per run and one per failed undo.
type Monitor interface {
	// Finished: a run of saga ended with outcome.
	Finished(saga string, outcome Outcome)
	// UndoFailed: step's Undo failed (or panicked) in a run of saga; the step
	// is in the run's Unresolved.
	UndoFailed(saga, step string, err error)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

func (NopMonitor) Finished(string, Outcome)         {}
func (NopMonitor) UndoFailed(string, string, error) {}
