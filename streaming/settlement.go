package streaming

import (
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/deadletter"
)

// settled wraps each worker of subscription in the runtime's settlement, so
// that no message loops for ever whatever the stack: a handlers/deadletter
// decorator configured by the subscription's Settlement options, publishing
// through writer (one for the whole consumer). It parks a delivery that does
// not decode before any handler sees it, and dead-letters a message that
// still fails alone once the stack gave up on it (retry's budget spent, or at
// once without retry), so its neighbours are handled once. A settlement
// decorator of the user's own inside it takes over for every batch it
// handles, so nothing is set aside twice.
func settled(connector messaging.Connector, writer *batch.Writer, subscription *Subscription, cfg config) []messaging.Handler {
	options := settlementOptions(writer, subscription, cfg)
	workers := make([]messaging.Handler, 0, len(subscription.workers))
	for _, worker := range subscription.workers {
		workers = append(workers, deadletter.New(connector, worker, options...))
	}
	return workers
}

// settlementOptions configure the runtime's settlement of subscription: the
// consumer's logger and writer, then what the subscription states, then how
// the subscription hands deliveries to its handlers (which its own option
// decides). The runner also declares the retry rungs they imply when a
// consumer starts.
func settlementOptions(writer *batch.Writer, subscription *Subscription, cfg config) []deadletter.Option {
	options := []deadletter.Option{deadletter.Options.Logger(cfg.logger)}
	if writer != nil {
		options = append(options, deadletter.Options.Writer(writer))
	}
	options = append(options, subscription.settlement...)
	return append(options, deadletter.Options.FullDelivery(subscription.fullDelivery))
}
