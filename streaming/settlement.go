package streaming

import (
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
)

// settled wraps each worker of subscription in the runtime's own settlement,
// so that no message loops for ever whatever the stack: a handlers/deadletter
// decorator publishing through connector. It parks a delivery that does not
// decode before any handler sees it, and dead-letters a message that still
// fails alone once the stack gave up on it (retry's budget spent, or at once
// without retry), so its neighbours are handled once. A settlement decorator
// of the user's own inside it takes over for every batch it handles, so
// nothing is set aside twice.
func settled(connector messaging.Connector, subscription *Subscription, cfg config) []messaging.Handler {
	options := settlementOptions(subscription, cfg)
	workers := make([]messaging.Handler, 0, len(subscription.workers))
	for _, worker := range subscription.workers {
		workers = append(workers, deadletter.New(connector, worker, options...))
	}
	return workers
}

// settlementOptions configure the runtime's settlement of subscription; the
// runner also declares the retry rungs they imply when a consumer starts.
func settlementOptions(subscription *Subscription, cfg config) []deadletter.Option {
	options := []deadletter.Option{
		deadletter.Options.FullDelivery(subscription.fullDelivery),
		deadletter.Options.Logger(cfg.logger),
	}
	if subscription.refuseRetry != "" {
		options = append(options, deadletter.Options.RefuseRetry(subscription.refuseRetry))
	}
	if !subscription.policy.IsZero() {
		options = append(options, deadletter.Options.Policy(subscription.policy))
	}
	return options
}
