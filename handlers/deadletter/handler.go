package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// handler is the settlement decorator New returns.
type handler struct {
	inner     messaging.Handler
	config    config
	publisher *publisher
	held      *heldMemory
}

// New wraps inner with settlement. connector is the raw transport the
// set-aside copies are published through. The handler returned is also an
// io.Closer: Close closes the connection it opened to republish, if any.
//
// A settlement decorator inside another (the streaming runtime wraps every
// worker in one) takes over: the outer one parks what does not decode, then
// sets nothing else aside for a batch the inner one handled, so no message
// is set aside twice.
func New(connector messaging.Connector, inner messaging.Handler, options ...Option) messaging.Handler {
	c := newConfig(options)
	return &handler{inner: inner, config: c, publisher: newPublisher(connector, c), held: newHeldMemory()}
}

// Middleware is New as a messaging.Middleware, for messaging.Chain.
func Middleware(connector messaging.Connector, options ...Option) messaging.Middleware {
	return func(inner messaging.Handler) messaging.Handler { return New(connector, inner, options...) }
}

// Close closes the connection opened to republish, if any (not a writer
// given with Options.Writer, which its owner closes). It waits for the
// republishes in progress, each bounded by Options.PublishTimeout; a later
// republish fails with messaging.ErrClosed, so its message is not
// acknowledged and the broker redelivers it.
func (h *handler) Close() error {
	return h.publisher.close()
}

// Handle parks undecodable deliveries, hands the rest to the inner handler and,
// when that panics, isolates and dead-letters the messages that still fail.
// It re-raises a failure that happened while ctx was cancelled, and one that
// is an outage (nothing of the batch is acknowledged). When the settlement of
// some deliveries cannot be completed (a republish fails), it goes on with
// the rest of the batch and then panics with an *UnsettledError naming them:
// every other delivery was handled or set aside.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	deliveries, envelopesInContext := deliveriesOf(ctx, messages)
	if outer, _ := messaging.SettlerFrom(ctx).(*call); outer != nil {
		// An outer settlement decorator (the streaming runtime's default)
		// leaves this batch to this one, so nothing is set aside twice.
		outer.innerSettled.Store(true)
	}
	c := &call{handler: h}              // the maps are made on the first settlement: most batches have none
	ctx = messaging.WithSettler(ctx, c) // with the batch's hop record

	rest, whole := c.settleUndecodable(ctx, deliveries)
	if len(rest) > 0 {
		c.handle(ctx, rest, func() (any, bool) {
			if whole && envelopesInContext && !h.config.fullDelivery {
				return c.runAsGiven(ctx, messages) // no copy: the common case
			}
			return c.run(ctx, rest)
		})
	}
	c.mustNotHaveFailed()
}

// settleUndecodable sets aside the deliveries that did not decode and returns
// the others, and whether they are the whole batch.
func (c *call) settleUndecodable(ctx context.Context, deliveries []messaging.Delivery) (rest []messaging.Delivery, whole bool) {
	rest, whole = deliveries, true // the batch as it came, unless something did not decode
	for i, delivery := range deliveries {
		if delivery.Undecodable == nil {
			if !whole {
				rest = append(rest, delivery)
			}
			continue
		}
		if whole {
			whole = false
			rest = append([]messaging.Delivery(nil), deliveries[:i]...)
		}
		switch {
		case errors.Is(delivery.Undecodable, messaging.ErrFiltered):
			// acknowledged without handling
		case messaging.IsRetryable(delivery.Undecodable):
			// A decode that may work later (a claim-check store or schema
			// registry that timed out) goes through the retry policy; a
			// failure is recorded, and the batch goes on.
			_ = c.retry(ctx, delivery, delivery.Undecodable)
		default:
			reason := undecodable(delivery.Undecodable)
			_ = c.setAside(ctx, delivery, wire.ParkedQueue(delivery.SourceQueue), ActionParked, reason)
		}
	}
	return rest, whole
}

// handle runs rest through the inner handler (run) and settles what it
// raised.
func (c *call) handle(ctx context.Context, rest []messaging.Delivery, run func() (any, bool)) {
	value, panicked := run()
	if c.innerSettled.Load() {
		if panicked && !c.adopt(value) {
			panic(value) // the inner settlement decided: not acknowledged
		}
		return
	}
	if panicked {
		if ctx.Err() != nil {
			panic(c.ending(value)) // the failure is the shutdown's, not the message's
		}
		switch err, isOutage := messaging.OutageOf(value); {
		case c.failedWith(value):
			// The handler stopped on a settlement that failed: that delivery
			// is left to the caller, and the others are run alone.
			c.isolate(ctx, rest)
		case isOutage:
			c.hold(rest, err)
			panic(c.ending(value))
		case len(rest) == 1:
			if !c.isSettled(rest[0]) {
				c.giveUp(ctx, rest[0], value)
			}
		default:
			c.isolate(ctx, rest)
		}
	}
	for _, delivery := range rest {
		if !c.isSettled(delivery) && !c.isFailed(delivery) {
			c.config.monitor.Settled(delivery.SourceQueue, ActionAccepted, "")
		}
	}
}

// failure is a message that failed when handled alone.
type failure struct {
	delivery messaging.Delivery
	value    any
}

// isolate runs each message of a failed batch alone and sets aside the ones
// that still fail. When every message run alone fails, and all the same way
// (the same panic type and text), the failure is taken to be a dependency's
// rather than each message's: none is set aside, and Handle panics with an
// error marked messaging.Outage, so nothing is acknowledged. A failure marked
// as an outage stops the isolation the same way. The same-way rule holds the
// same messages for at most SameFailureHold; after that they are set aside.
func (c *call) isolate(ctx context.Context, deliveries []messaging.Delivery) {
	var failures []failure
	tried := 0
	for _, delivery := range deliveries {
		if c.isSettled(delivery) || c.isFailed(delivery) {
			continue
		}
		tried++
		value, panicked := c.run(ctx, []messaging.Delivery{delivery})
		if !panicked && !c.isFailed(delivery) {
			c.markDone(delivery) // completed alone: its work is committed
		}
		if !panicked || c.failedWith(value) || c.isFailed(delivery) {
			continue // handled, or its settlement failed: left to the caller
		}
		if ctx.Err() != nil {
			panic(c.ending(value))
		}
		if err, isOutage := messaging.OutageOf(value); isOutage {
			c.hold(deliveries, err)
			panic(c.ending(value))
		}
		failures = append(failures, failure{delivery: delivery, value: value})
	}
	ids := make([]string, len(failures))
	for i, f := range failures {
		ids[i] = f.delivery.MessageID
	}
	if len(failures) >= 2 && len(failures) == tried && sameWay(failures) && !c.handler.held.overdue(ids) {
		err := messaging.Outage(fmt.Errorf("deadletter: all %d messages of the batch failed alone the same way (%s), so the failure is taken to be a dependency's, not theirs: none was set aside, and the broker will redeliver them; mark a failure that is each message's own with messaging.Fatal",
			len(failures), failureText(failures[0].value)))
		c.hold(deliveries, err)
		panic(c.ending(err))
	}
	c.handler.held.forget(ids)
	for _, f := range failures {
		c.giveUp(ctx, f.delivery, f.value)
	}
}

// sameWay reports whether every failure has the same panic type and text.
func sameWay(failures []failure) bool {
	first := signature(failures[0].value)
	for _, f := range failures[1:] {
		if signature(f.value) != first {
			return false
		}
	}
	return true
}

func signature(value any) string {
	return fmt.Sprintf("%T\x00%s", value, failureText(value))
}

func failureText(value any) string {
	if err, ok := value.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(value)
}

// hold reports the deliveries not yet settled as held for an outage: they are
// not acknowledged, and the broker redelivers them.
func (c *call) hold(deliveries []messaging.Delivery, cause error) {
	reason := bounded(cause.Error())
	held := 0
	queue := ""
	for _, delivery := range deliveries {
		if c.isSettled(delivery) {
			continue
		}
		held++
		queue = delivery.SourceQueue
		c.config.monitor.Settled(delivery.SourceQueue, ActionHeldForOutage, reason)
	}
	if held == 0 {
		return
	}
	c.config.logger.Warn(fmt.Sprintf("Not setting aside [%d] message(s) from [%s]: the failure is an outage [%s]; they are not acknowledged and the broker will redeliver them.", held, queue, reason),
		slog.String("queue", queue), slog.Int("count", held), slog.String("reason", reason))
}

// deliveriesOf returns the deliveries of a batch: the messages themselves
// when they are messaging.Delivery values, else the envelopes that travel
// in the context beside the decoded values (messaging.DeliveriesFrom: the
// streaming runtime's settlement sets them). Anything else is a wiring
// mistake.
func deliveriesOf(ctx context.Context, messages []any) (deliveries []messaging.Delivery, fromContext bool) {
	if len(messages) > 0 {
		switch messages[0].(type) {
		case messaging.Delivery, *messaging.Delivery:
		default:
			// Decoded values: the envelopes travel in the context (shared,
			// read only).
			if envelopes := messaging.DeliveriesFrom(ctx); len(envelopes) == len(messages) {
				return envelopes, true
			}
			panic(fmt.Sprintf("deadletter: the handler received a %T, not a messaging.Delivery, and the context carries no envelopes for it; "+
				"run it under the streaming runtime, or pass messaging.Delivery values", messages[0]))
		}
	}
	deliveries = make([]messaging.Delivery, 0, len(messages))
	for _, message := range messages {
		switch delivery := message.(type) {
		case messaging.Delivery:
			deliveries = append(deliveries, delivery)
		case *messaging.Delivery:
			deliveries = append(deliveries, *delivery)
		default:
			panic(fmt.Sprintf("deadletter: the handler received a %T among messaging.Delivery values; pass one kind", message))
		}
	}
	return deliveries, false
}

type deliveryKey struct {
	id        uint64
	messageID string
}

func keyOf(delivery messaging.Delivery) deliveryKey {
	return deliveryKey{id: delivery.DeliveryID, messageID: delivery.MessageID}
}

// call is the state of one Handle: which deliveries were settled through the
// context, and whether a republish failed.
type call struct {
	*handler
	mu      sync.Mutex
	settled map[deliveryKey]bool
	// decisions records, per delivery, what it was settled as.
	decisions map[deliveryKey]messaging.Decision
	// failures are the deliveries whose settlement failed, in order.
	failures []unsettled
	// innerSettled is set when a settlement decorator inside this one
	// handled the batch: this one then settles nothing and re-raises what it
	// raised.
	innerSettled atomic.Bool
	// done are the deliveries settled for good (set aside and confirmed, or
	// completed alone): a batch that ends early still lets them be
	// acknowledged (see PartlySettledError).
	done []messaging.Delivery
}

func (c *call) isSettled(delivery messaging.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled[keyOf(delivery)]
}

func (c *call) markSettled(delivery messaging.Delivery, action, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled == nil {
		c.settled = map[deliveryKey]bool{}
		c.decisions = map[deliveryKey]messaging.Decision{}
	}
	c.settled[keyOf(delivery)] = true
	if action != ActionAccepted {
		// A copy was confirmed: the original may go. An acceptance is not
		// for good until the batch completes (its work may yet roll back).
		// Each delivery is settled once (every settling path checks
		// isSettled first), so it is listed once.
		c.done = append(c.done, delivery)
	}
	decision := messaging.Decision{Verdict: verdictOf(action)}
	if reason != "" {
		decision.Reason = errors.New(reason)
	}
	c.decisions[keyOf(delivery)] = decision
}

// run hands deliveries to the inner handler and recovers a panic.
func (c *call) run(ctx context.Context, deliveries []messaging.Delivery) (value any, panicked bool) {
	messages := make([]any, 0, len(deliveries))
	for _, delivery := range deliveries {
		if c.config.fullDelivery {
			messages = append(messages, delivery)
		} else {
			messages = append(messages, delivery.Message)
		}
	}
	return c.runAsGiven(messaging.WithDeliveries(ctx, deliveries), messages)
}

// runAsGiven hands the inner handler the batch exactly as this decorator
// received it (decoded values, their envelopes already in ctx) and recovers a
// panic.
func (c *call) runAsGiven(ctx context.Context, messages []any) (value any, panicked bool) {
	returned := false
	defer func() {
		if !returned {
			value = recover()
			panicked = true
		}
	}()
	c.inner.Handle(ctx, messages...)
	returned = true
	return nil, false
}

// giveUp dead-letters a delivery whose handling panicked with value; a
// republish that fails is recorded (see mustNotHaveFailed). When the reason says the budget was exhausted
// (the inner retry decorator made its attempts in the process), the copy
// carries that attempt count in x-acemq-attempt, not the delivery's.
func (c *call) giveUp(ctx context.Context, delivery messaging.Delivery, value any) {
	reason := c.failureReason(value)
	attempt := delivery.Attempt
	if err, isError := value.(error); c.config.maxAttempts > 0 && !(isError && messaging.IsFatal(err)) {
		attempt = max(attempt, c.config.maxAttempts)
	}
	_ = c.setAsideAt(ctx, delivery, wire.DeadLetterQueue(delivery.SourceQueue), ActionDeadLettered, reason, attempt)
}

// failureReason words a panic value that escaped the inner handler.
func (c *call) failureReason(value any) string {
	err, isError := value.(error)
	if isError && messaging.IsFatal(err) {
		return unprocessable(err)
	}
	text := fmt.Sprint(value)
	if isError {
		text = err.Error()
	}
	if c.config.maxAttempts > 0 {
		return exhausted(c.config.maxAttempts, text)
	}
	return "the handler failed: " + text
}

// setAside republishes delivery to target with reason and records the
// outcome.
// It publishes nothing for a delivery already settled in this Handle. The
// copy has no per-message TTL (as with RabbitMQ's own dead-lettering), so it
// stays in the .dlq or .parked queue until an operator acts on it. The reason
// is bounded (MaxReason); when the wire refuses the whole copy, a reduced one
// is set aside instead (see reductions), so the message's own content never
// makes settlement fail.
func (c *call) setAside(ctx context.Context, delivery messaging.Delivery, target, action, reason string) error {
	return c.setAsideAt(ctx, delivery, target, action, reason, delivery.Attempt)
}

// setAsideAt is setAside with the copy's x-acemq-attempt set to attempt.
func (c *call) setAsideAt(ctx context.Context, delivery messaging.Delivery, target, action, reason string, attempt int) error {
	if c.isSettled(delivery) {
		return nil
	}
	reason = bounded(reason)
	full := delivery.Redispatch(target)
	full.Attempt = attempt
	full.Error = reason
	full.Expiration = 0
	rungs := reductions(full)
	var err error
	for i, rung := range rungs {
		last := i == len(rungs)-1
		dispatch := rung.dispatch
		if rung.dropped != "" {
			dispatch.Error = bounded(reason + " [" + rung.dropped + "]")
		}
		if !last && wire.Check(dispatch, 0) != nil {
			continue // this form cannot travel: try a smaller one
		}
		if err = c.publish(ctx, dispatch); err == nil {
			c.markSettled(delivery, action, dispatch.Error)
			c.config.monitor.Settled(delivery.SourceQueue, action, dispatch.Error)
			c.config.logger.Warn(fmt.Sprintf("Set aside message [%s] from [%s] to [%s]: %s", wire.Shorten(delivery.MessageID), delivery.SourceQueue, target, dispatch.Error),
				slog.String("queue", delivery.SourceQueue), slog.String("target", target), slog.String("action", action),
				slog.String("message_id", wire.Shorten(delivery.MessageID)), slog.String("reason", dispatch.Error))
			return nil
		}
		if !errors.Is(err, messaging.ErrWireLimit) {
			break
		}
	}
	return c.republishFailed(delivery, target, err)
}

// republish publishes within the publish timeout, detached from the handler's
// cancellation; on failure it records the failure, so the batch is not
// acknowledged, and returns it.
func (c *call) republish(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch) error {
	if err := c.publish(ctx, dispatch); err != nil {
		return c.republishFailed(delivery, dispatch.RoutingKey, err)
	}
	return nil
}

// publish publishes within the publish timeout, detached from the handler's
// cancellation.
func (c *call) publish(ctx context.Context, dispatch messaging.Dispatch) error {
	publishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.config.publishTimeout)
	defer cancel()
	return c.publisher.publish(publishCtx, dispatch)
}

// republishFailed records a failed republish, so the batch is not
// acknowledged, and returns it.
func (c *call) republishFailed(delivery messaging.Delivery, target string, err error) error {
	id := wire.Shorten(delivery.MessageID)
	err = fmt.Errorf("deadletter: message %s from %q was not republished to %q, so it is not acknowledged and the broker will redeliver it: %w",
		id, delivery.SourceQueue, target, err)
	c.markFailed(delivery, err)
	c.config.monitor.Settled(delivery.SourceQueue, ActionSetAsideFailed, err.Error())
	c.config.logger.Warn(fmt.Sprintf("Unable to republish message [%s] from [%s] to [%s] [%v]; it was not acknowledged and the broker will redeliver it.",
		id, delivery.SourceQueue, target, err),
		slog.String("queue", delivery.SourceQueue), slog.String("target", target), slog.Any("error", err))
	return err
}
