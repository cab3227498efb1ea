package streaming

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
)

// session is one live stream: a reader goroutine filling the buffer and one
// goroutine per worker forming batches from it.
type session struct {
	*runner
	stream messaging.Stream
	// requeuer returns one delivery to its queue, when the stream can.
	requeuer messaging.Requeuer
	buffer   chan *messaging.Delivery

	readCtx  context.Context
	stopRead context.CancelFunc
	// handleCtx is given to Handle: cancelled on hard shutdown.
	handleCtx    context.Context
	cancelHandle context.CancelFunc
	// ackCtx bounds acknowledgements: cancelled only when in-flight work is
	// abandoned after the grace that follows the shutdown deadline.
	ackCtx    context.Context
	cancelAck context.CancelFunc

	failed   chan struct{}
	failOnce sync.Once
	acked    atomic.Bool

	// coalesce is how many handled deliveries a worker may hold before it
	// acknowledges them, while more are already buffered: one multiple-ack
	// instead of one per batch. Half the prefetch keeps the broker sending.
	coalesce int
	// lingerUnder is how many handled deliveries a worker may hold while it
	// waits up to ackLinger for the next delivery instead of acknowledging
	// at once when the buffer runs dry: under load the next one is
	// microseconds away, and each acknowledgement is a frame the client and
	// the broker both process. Half the prefetch, shared by the workers, so
	// the broker never runs out of prefetch while a worker lingers.
	lingerUnder int
}

// ackLinger bounds how long handled deliveries wait for the next delivery
// before they are acknowledged, when fewer than lingerUnder are held and
// deliveries are flowing (the last one came within ackLinger of the worker
// asking for it): a busy consumer acknowledges once per half prefetch; one
// whose deliveries come further apart (a request and its reply, one at a
// time) acknowledges each at once, as the linger would only delay it.
const ackLinger = time.Millisecond

// ackHold bounds how long a worker holds handled deliveries while more are
// buffered: once the oldest was handled that long ago, or a batch took that
// long to handle, what is held is acknowledged whatever waits. A connection
// lost under a slow handler so redelivers little of its finished work (a
// set-aside copy already confirmed is not sent again each time), while a fast
// consumer still sends one acknowledgement per half prefetch. What is held
// when a batch starts waits for that batch's Handle to return: a fast batch
// followed by a slow one is acknowledged when the slow one ends.
const ackHold = 20 * time.Millisecond

func newSession(r *runner, stream messaging.Stream) *session {
	s := &session{
		runner:   r,
		stream:   stream,
		buffer:   make(chan *messaging.Delivery, r.subscription.bufferCapacity),
		failed:   make(chan struct{}),
		coalesce: max(int(r.subscription.batchCapacity), int(r.subscription.bufferCapacity)/2, 1),
	}
	s.lingerUnder = int(r.subscription.bufferCapacity) / 2 / max(len(r.workers), 1)
	s.requeuer, _ = messaging.As[messaging.Requeuer](stream)
	s.readCtx, s.stopRead = context.WithCancel(r.soft)
	s.handleCtx, s.cancelHandle = context.WithCancel(context.WithoutCancel(r.soft))
	s.ackCtx, s.cancelAck = context.WithCancel(context.WithoutCancel(r.soft))
	return s
}

// run blocks until the session ends and reports whether it acknowledged
// anything.
func (s *session) run() bool {
	defer s.cancelAck()
	defer s.cancelHandle()

	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		s.read()
	}()

	var workers sync.WaitGroup
	for _, handler := range s.workers {
		ctx, cancel := context.WithCancel(s.handleCtx)
		listener := &workerListener{health: s.health, cancel: cancel, sessionFailed: s.failed}
		ctx = messaging.WithOutageListener(ctx, listener)
		workers.Go(func() {
			defer cancel()
			s.work(ctx, handler)
		})
	}
	workersDone := make(chan struct{})
	go func() {
		workers.Wait()
		close(workersDone)
	}()

	s.await(workersDone)
	s.stopRead()
	_ = s.stream.Close()
	<-readerDone
	return s.acked.Load()
}

// fail ends the session early (stream error, handler panic, failed
// acknowledgement): no worker starts another batch.
func (s *session) fail() {
	s.failOnce.Do(func() {
		close(s.failed)
		s.stopRead()
		s.health.sessionFailed() // a batch held through an outage cannot be acknowledged now
	})
}

// await waits for the workers, applying the shutdown strategy when the soft
// context ends.
func (s *session) await(workersDone <-chan struct{}) {
	queue := s.subscription.queue
	shutdown := s.soft.Done()
	var deadline, grace <-chan time.Time
	var timers []*time.Timer
	defer func() {
		for _, timer := range timers {
			timer.Stop()
		}
	}()
	after := func(d time.Duration) <-chan time.Time {
		timer := time.NewTimer(d)
		timers = append(timers, timer)
		return timer.C
	}
	for {
		select {
		case <-workersDone:
			return
		case <-shutdown:
			shutdown = nil
			s.health.stop() // a batch held through an outage has nothing to finish
			if s.subscription.strategy == ShutdownStrategyImmediate {
				s.cancelHandle()
				grace = after(abandonGrace)
				continue
			}
			deadline = after(s.subscription.shutdownTimeout)
		case <-deadline:
			deadline = nil
			// Only the handlers are cancelled: a batch whose Handle still
			// returns normally (a settlement decorator that already set a
			// message aside, ignoring cancellation) must be acknowledged, or
			// the broker redelivers it and the copy is made twice. The
			// acknowledgement is bounded by the transport; ackCtx is cancelled
			// only when the grace below runs out.
			s.cancelHandle()
			s.forced.Store(true)
			s.monitor.ShutdownForced(queue)
			timeout := s.subscription.shutdownTimeout
			s.logger.Warn(fmt.Sprintf("Workers on stream [%s] did not conclude within [%s] of shutdown; abandoning in-flight deliveries.", queue, timeout),
				slog.String("stream", queue), slog.Duration("timeout", timeout))
			grace = after(abandonGrace)
		case <-grace:
			s.cancelAck()
			s.logger.Error(fmt.Sprintf("A handler on stream [%s] ignored its cancelled context; leaving it running unacknowledged.", queue),
				slog.String("stream", queue))
			return
		}
	}
}

// read fills the buffer until the stream ends, then closes the buffer.
func (s *session) read() {
	defer close(s.buffer)
	queue := s.subscription.queue
	for {
		delivery := deliveryPool.Get().(*messaging.Delivery)
		if err := s.stream.Read(s.readCtx, delivery); err != nil {
			// Not released: a Read that gave up may still be filling it.
			if s.readCtx.Err() == nil {
				s.logger.Info(fmt.Sprintf("Stream [%s] ended [%v]", queue, err),
					slog.String("stream", queue), slog.Any("error", err))
				s.fail()
			}
			return
		}
		select {
		case s.buffer <- delivery:
		case <-s.readCtx.Done():
			return // not acknowledged: the broker redelivers it
		}
	}
}

func (s *session) work(ctx context.Context, handler messaging.Handler) {
	var pending []*messaging.Delivery // handled, not yet acknowledged
	requeues := 0                     // consecutive batches that returned deliveries to the queue
	linger := time.NewTimer(ackLinger)
	linger.Stop()
	defer linger.Stop()
	flowing := false   // the last delivery came within ackLinger of the worker asking for it
	var held time.Time // when the oldest of pending was handled
	// taken holds each batch in turn: nothing keeps a batch's slice past its
	// iteration (pending copies the deliveries it holds), so one slice serves.
	var taken []*messaging.Delivery
	var acks []messaging.Delivery // what acknowledge hands the stream, reused
	for {
		var batch []*messaging.Delivery
		ok := true
		switch {
		case len(pending) == 0:
			asked := time.Now()
			batch, ok = s.next(nil, taken)
			flowing = time.Since(asked) < ackLinger
		case len(pending) < s.lingerUnder && flowing:
			linger.Reset(ackLinger)
			batch, ok = s.next(linger.C, taken)
			linger.Stop()
			flowing = batch != nil
		default:
			batch, ok = s.next(closed, taken)
			flowing = flowing || batch != nil
		}
		if batch != nil {
			taken = batch
		}
		if ok && batch == nil { // nothing buffered right now: settle what was handled
			if !s.acknowledge(pending, &acks) {
				return
			}
			pending = pending[:0]
			continue
		}
		if !ok {
			s.acknowledge(pending, &acks)
			return
		}
		began := time.Now()
		handled, ok := s.handleBatch(ctx, handler, batch)
		slow := time.Since(began) >= ackHold
		if !ok {
			// Handled before the panic, and what the panicking batch's
			// settlement had settled for good: do not make the broker
			// redeliver them.
			s.acknowledge(append(pending, handled...), &acks)
			s.fail()
			return
		}
		pending = append(pending, handled...)
		if len(handled) < len(batch) {
			// Some went back to the queue: settle the rest now, and let a
			// settlement that keeps failing come back at the reconnect
			// schedule's pace rather than at once.
			if !s.acknowledge(pending, &acks) {
				return
			}
			pending = pending[:0]
			requeues++
			s.pause(s.subscription.reconnectSchedule().Delay(requeues, nil))
			continue
		}
		requeues = 0
		if len(pending) == len(handled) {
			held = time.Now()
		}
		if len(pending) < s.coalesce && !slow && time.Since(held) < ackHold && !s.stopping() {
			continue // more is buffered, or next will say not: one ack for all of them
		}
		if !s.acknowledge(pending, &acks) {
			return
		}
		pending = pending[:0]
	}
}

// pause waits d before the worker takes its next batch, or less when the
// session fails or shutdown begins.
func (s *session) pause(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.failed:
	case <-s.handleCtx.Done():
	case <-s.soft.Done():
	}
}

// stopping reports whether a worker must not start another batch.
func (s *session) stopping() bool {
	select {
	case <-s.failed:
		return true
	default:
	}
	if s.handleCtx.Err() != nil {
		return true
	}
	return s.subscription.strategy != ShutdownStrategyDrain && s.soft.Err() != nil
}

// closed is a channel that is always ready: next(closed) does not wait.
var closed = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// next waits for one delivery and takes whatever else is buffered, up to the
// batch capacity, without waiting for more, reusing into's array. It waits
// for the first one until giveUp is ready (never when giveUp is nil), and
// returns (nil, true) when nothing came by then.
func (s *session) next(giveUp <-chan time.Time, into []*messaging.Delivery) ([]*messaging.Delivery, bool) {
	var shutdown <-chan struct{}
	if s.subscription.strategy != ShutdownStrategyDrain {
		shutdown = s.soft.Done()
	}
	var first *messaging.Delivery
	select {
	case delivery, open := <-s.buffer:
		if !open {
			return nil, false
		}
		first = delivery
	default:
		select {
		case delivery, open := <-s.buffer:
			if !open {
				return nil, false
			}
			first = delivery
		case <-giveUp:
			return nil, true
		case <-s.failed:
			return nil, false
		case <-s.handleCtx.Done():
			return nil, false
		case <-shutdown:
			return nil, false
		}
	}
	if s.stopping() {
		return nil, false
	}
	capacity := int(s.subscription.batchCapacity)
	batch := append(into[:0], first)
	for len(batch) < capacity {
		select {
		case delivery, open := <-s.buffer:
			if !open {
				return batch, true
			}
			batch = append(batch, delivery)
		default:
			return batch, true
		}
	}
	return batch, true
}

// handleBatch hands a batch to the handler and returns the deliveries to
// acknowledge. It reports false when the handler panicked (logged here; the
// caller ends the session, acknowledging only what the batch's settlement
// had settled for good before it ended), unless what failed was the
// settlement of some deliveries and each of those could be returned to its
// queue alone: then the others are acknowledged and the session goes on.
func (s *session) handleBatch(ctx context.Context, handler messaging.Handler, batch []*messaging.Delivery) ([]*messaging.Delivery, bool) {
	queue := s.subscription.queue
	messages, deliveries := batchSlices(len(batch))
	for _, delivery := range batch {
		if delivery.Undecodable != nil && errors.Is(delivery.Undecodable, messaging.ErrFiltered) {
			continue
		}
		// The decoded values, their envelopes beside them in the context; the
		// settlement hands on Delivery values with FullDeliveryToHandler.
		messages = append(messages, delivery.Message)
		deliveries = append(deliveries, *delivery)
	}
	if len(messages) == 0 {
		return batch, true
	}
	ctx = messaging.WithDeliveries(ctx, deliveries)
	started := time.Now()
	value, stack, panicked := s.handle(ctx, handler, messages)
	s.monitor.BatchHandled(queue, len(messages), time.Since(started))
	if !panicked {
		s.health.batchConcluded()
		return batch, true
	}
	if rest, ok := s.requeueUnsettled(batch, value); ok {
		s.health.batchConcluded()
		return rest, true
	}
	settled := settledOf(batch, value)
	if err, isError := value.(error); isError && messaging.IsOutage(err) && s.soft.Err() == nil {
		s.health.outagePanic(err)
		s.logger.Warn(fmt.Sprintf("Handler on stream [%s] failed with an outage [%v]; [%d] delivery(ies) were not acknowledged and the broker will redeliver them after the subscription reconnects.", queue, err, len(batch)-len(settled)),
			slog.String("stream", queue), slog.Int("count", len(batch)-len(settled)), slog.Any("error", err))
		return settled, false
	}
	s.health.batchConcluded()
	s.logger.Error(fmt.Sprintf("Handler on stream [%s] panicked [%v]; [%d] delivery(ies) were not acknowledged and the broker will redeliver them after the subscription reconnects.", queue, value, len(batch)-len(settled)),
		slog.String("stream", queue), slog.Int("count", len(batch)-len(settled)),
		slog.String("panic", fmt.Sprint(value)), slog.String("stack", string(stack)))
	return settled, false
}

// batchOfOne holds the two slices of a batch of one delivery, the default
// BatchCapacity, in one allocation instead of two.
type batchOfOne struct {
	message  [1]any
	delivery [1]messaging.Delivery
}

// batchSlices returns empty slices with room for n messages and their
// envelopes: handlers may keep them, so each batch has its own.
func batchSlices(n int) ([]any, []messaging.Delivery) {
	if n == 1 {
		one := new(batchOfOne)
		return one.message[:0], one.delivery[:0]
	}
	return make([]any, 0, n), make([]messaging.Delivery, 0, n)
}

// requeueUnsettled handles a batch whose settlement failed for some of its
// deliveries (value wraps a *deadletter.UnsettledError; every other delivery
// was handled or set aside): it returns each of those to its queue alone
// through the stream's messaging.Requeuer, and the rest of the batch to
// acknowledge. It reports false, leaving the session to end as for any
// panic, when value is something else, the stream cannot requeue, or a
// requeue fails.
func (s *session) requeueUnsettled(batch []*messaging.Delivery, value any) ([]*messaging.Delivery, bool) {
	err, isError := value.(error)
	var unsettled *deadletter.UnsettledError
	if !isError || !errors.As(err, &unsettled) || s.requeuer == nil || s.handleCtx.Err() != nil {
		return nil, false
	}
	queue := s.subscription.queue
	rest := make([]*messaging.Delivery, 0, len(batch))
	requeued := 0
	for _, delivery := range batch {
		if !unsettled.Holds(*delivery) {
			rest = append(rest, delivery)
			continue
		}
		if requeueErr := s.requeuer.Requeue(s.ackCtx, *delivery); requeueErr != nil {
			s.logger.Warn(fmt.Sprintf("Unable to return delivery [%s] of stream [%s] to its queue [%v]; ending the session so the broker redelivers it.", delivery.MessageID, queue, requeueErr),
				slog.String("stream", queue), slog.String("message_id", delivery.MessageID), slog.Any("error", requeueErr))
			s.monitor.DeliveriesRequeued(queue, requeued)
			return nil, false
		}
		requeued++
	}
	if requeued != len(unsettled.Deliveries) {
		return nil, false // the settlement named a delivery this batch does not hold
	}
	s.monitor.DeliveriesRequeued(queue, requeued)
	s.logger.Warn(fmt.Sprintf("Returned [%d] delivery(ies) of stream [%s] to the queue, alone, because their settlement could not be completed [%v]; the broker will redeliver them, and the session goes on.", requeued, queue, err),
		slog.String("stream", queue), slog.Int("count", requeued), slog.Any("error", err))
	return rest, true
}

// acknowledge settles handled deliveries with one call (a multiple-ack where
// the tags allow); it reports whether the worker may continue. scratch is
// the worker's own slice for the values the stream is given (Stream's
// Acknowledge keeps none of them). Acknowledged, the deliveries go back to
// the pool read takes them from.
func (s *session) acknowledge(handled []*messaging.Delivery, scratch *[]messaging.Delivery) bool {
	if len(handled) == 0 {
		return true
	}
	queue := s.subscription.queue
	acks := (*scratch)[:0]
	for _, delivery := range handled {
		acks = append(acks, *delivery)
	}
	err := s.stream.Acknowledge(s.ackCtx, acks...)
	clear(acks) // hold no payload or decoded value past the call
	if cap(acks) <= maxKeptAcks {
		*scratch = acks[:0]
	} else {
		*scratch = nil // a burst's worth is not kept for the session's life
	}
	s.monitor.BatchAcknowledged(queue, len(acks), err)
	if err != nil {
		s.logger.Warn(fmt.Sprintf("Unable to acknowledge [%d] delivery(ies) from stream [%s] [%v]; the broker will redeliver them.", len(acks), queue, err),
			slog.String("stream", queue), slog.Int("count", len(acks)), slog.Any("error", err))
		s.fail()
		return false
	}
	s.acked.Store(true)
	for _, delivery := range handled {
		release(delivery)
	}
	return true
}

// maxKeptAcks bounds the acknowledgement slice a worker keeps between
// acknowledgements: beyond it (a FullThrottle burst), the slice is left to
// the collector instead of holding its size for the session's life.
const maxKeptAcks = 1024

// deliveryPool holds the Delivery values read fills: a delivery goes back once
// acknowledged, when the runtime holds it nowhere else (handlers get copies),
// so a busy consumer reuses a few hundred instead of allocating one per
// message. Each comes out zeroed, as a Stream's Read may fill only some fields.
var deliveryPool = sync.Pool{New: func() any { return new(messaging.Delivery) }}

// release zeroes delivery, so the pool keeps no payload alive, and returns it.
func release(delivery *messaging.Delivery) {
	*delivery = messaging.Delivery{}
	deliveryPool.Put(delivery)
}

// settledOf is what of a batch that ended early its settlement had already
// settled for good (value wraps a *deadletter.PartlySettledError): set aside
// with a confirmed copy, or completed alone. Those are acknowledged:
// redelivered, they would be set aside or handled a second time. The rest
// stay unacknowledged.
func settledOf(batch []*messaging.Delivery, value any) []*messaging.Delivery {
	err, isError := value.(error)
	var partly *deadletter.PartlySettledError
	if !isError || !errors.As(err, &partly) {
		return nil
	}
	settled := make([]*messaging.Delivery, 0, len(partly.Settled))
	for _, delivery := range batch {
		for _, d := range partly.Settled {
			if d.DeliveryID == delivery.DeliveryID && d.MessageID == delivery.MessageID {
				settled = append(settled, delivery)
				break
			}
		}
	}
	return settled
}

// handle calls the handler and recovers a panic, with its stack.
func (s *session) handle(ctx context.Context, handler messaging.Handler, messages []any) (value any, stack []byte, panicked bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		value = recover()
		stack = debug.Stack()
		panicked = true
	}()
	handler.Handle(ctx, messages...)
	returned = true
	return nil, nil, false
}
