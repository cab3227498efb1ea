package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// minimumUnclaimedReturns is the floor of the cap on returns that no confirm has
// claimed yet.
const minimumUnclaimedReturns = 64

// publisher owns one confirm-mode channel. Publishes are pipelined: the write lock
// covers basic.publish only, a window bounds the publishes awaiting a confirm, and
// one goroutine matches confirms and returns to their messages.
type publisher struct {
	conn   *connection
	ch     adapter.Channel
	config *config
	slots  chan struct{} // one token per publish awaiting its confirm
	ended  chan struct{} // closed when the channel has ended and every pending publish is answered

	writeMu sync.Mutex // serialises basic.publish and the sequence number
	seq     uint64     // the delivery tag of the last publish the channel accepted

	confirmed atomic.Uint64 // confirms (acks and nacks) received, to tell a stalled broker from a busy window

	mu          sync.Mutex
	pending     map[uint64]inflight
	returned    map[returnKey][]amqp.Return // returns not yet claimed by their confirm, oldest first per key
	returnOrder []returnKey                 // the key of every unclaimed return, oldest first
	endReason   error                       // why the channel ended, once it has
}

// returnKey identifies the mandatory publish a basic.return answers. The message
// id alone is not enough: two messages in flight may share it (a republish), and
// only one of them may have been unroutable.
type returnKey struct {
	id, exchange, key string
}

// pendingWrite is one write's messages and their results. The drainer answers
// a sent message by setting its result, under the publisher's mu, until the
// write abandons its wait; one channel per write, not one per message, tells
// the write that every answer is in.
type pendingWrite struct {
	messages []outgoing
	results  []messaging.PublishResult
	done     chan struct{} // closed once sealed and every sent message is answered

	// Under the publisher's mu.
	unanswered int  // sent messages without an answer
	sealed     bool // every message has been sent or given up on
	abandoned  bool // the write stopped waiting: later answers are not recorded
}

// inflight is a sent message awaiting its confirm: the index of its message in
// its write.
type inflight struct {
	write *pendingWrite
	index int
}

func (f inflight) message() *outgoing { return &f.write.messages[f.index] }

// answerLocked records the answer of a sent message. The caller holds p.mu and
// has removed f from p.pending.
func answerLocked(f inflight, result messaging.PublishResult) {
	w := f.write
	if !w.abandoned {
		w.results[f.index] = result
	}
	w.unanswered--
	if w.unanswered == 0 && w.sealed {
		close(w.done)
	}
}

func newPublisher(ctx context.Context, conn *connection) (*publisher, error) {
	ch, err := conn.openChannel(ctx)
	if err != nil {
		return nil, err
	}
	window := conn.config.maxOutstanding
	// The notify channels hold a whole window so the connection's reader never
	// waits on this publisher.
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window))
	returns := ch.NotifyReturn(make(chan amqp.Return, window))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := conn.call("confirm.select", ErrConnectTimeout, func() error { return ch.Confirm(false) }); err != nil {
		_ = conn.closeChannel(ch)
		return nil, fmt.Errorf("put the channel in confirm mode: %w", err)
	}
	p := &publisher{
		conn:     conn,
		ch:       ch,
		config:   conn.config,
		slots:    make(chan struct{}, window),
		ended:    make(chan struct{}),
		pending:  map[uint64]inflight{},
		returned: map[returnKey][]amqp.Return{},
	}
	go p.drain(confirms, returns, closes)
	return p, nil
}

// operation names a kind of write for its timeout log line and sentinel.
type operation struct {
	name     string
	sentinel error
}

var (
	publishOperation = operation{name: "publish", sentinel: ErrPublishTimeout}
	commitOperation  = operation{name: "transaction commit", sentinel: ErrCommitTimeout}
)

// publish sends every message, pipelined, then waits for their confirms. It
// returns how many landed (confirmed and, when mandatory, routed) and, when not all
// did, a *messaging.PublishError.
func (p *publisher) publish(ctx context.Context, op operation, messages []outgoing) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%d message(s) were not published: %w", len(messages), err)
	}
	w := &pendingWrite{messages: messages, results: make([]messaging.PublishResult, len(messages)), done: make(chan struct{})}
	results := w.results
	for i, m := range messages {
		results[i].MessageID = m.id
	}

	bound := newWriteBound(p.conn, op.name)
	defer bound.Stop()
	confirmsAtStart := p.confirmed.Load()

	paused := p.conn.pausedSignal()
	var stop error
	for i, m := range messages {
		// An unsent message's result is set here, outside p.mu: the drainer only
		// ever answers the sent ones.
		if m.refused != nil { // refused alone before anything was sent; not a reason to stop the others
			results[i].Err = m.refused
			continue
		}
		if stop != nil {
			results[i].Err = fmt.Errorf("message %s was not published because an earlier message of this write failed: %w", m.id, stop)
			continue
		}
		select {
		case <-paused:
			stop = p.pausedError()
		default:
			stop = p.acquire(ctx, op, bound.Done(), paused, confirmsAtStart)
		}
		if stop == nil {
			stop = p.send(op, bound, w, i)
		}
		if stop != nil {
			results[i].Err = stop
			continue
		}
		p.config.monitor.DispatchPublished()
	}

	p.mu.Lock()
	w.sealed = true
	waiting := w.unanswered > 0
	p.mu.Unlock()
	if waiting {
		p.await(ctx, op, w, bound, paused, stop)
	}

	landed := 0
	for _, r := range results {
		if r.Err == nil {
			landed++
		}
	}
	if landed == len(results) {
		return landed, nil
	}
	return landed, &messaging.PublishError{Results: results}
}

// await waits until every sent message of w is answered, ctx ends, the broker
// blocks the connection or the write's bound passes. A message still
// unanswered then may or may not have reached the broker, and says so. stop
// is why the write stopped sending, if it did.
func (p *publisher) await(ctx context.Context, op operation, w *pendingWrite, bound *writeBound, paused <-chan struct{}, stop error) {
	var abandon error
	timedOut := false
	select {
	case <-w.done:
		return
	case <-ctx.Done():
		abandon = fmt.Errorf("stopped waiting for the broker's confirm (%w); the message may or may not have reached the broker: %w", ctx.Err(), messaging.ErrArrivalUnknown)
	case <-paused:
		// The broker stopped reading this connection: a message written but
		// not yet confirmed sits unread and lands only when the alarm
		// clears, which may take hours. Fail fast, and say it may arrive
		// (a caller that republishes it may create a duplicate, never a
		// loss); it is not "not sent".
		abandon = fmt.Errorf("%w; this message was written before the block and was not confirmed, so it may still arrive when the alarm clears: %w", p.pausedError(), messaging.ErrArrivalUnknown)
	case <-bound.Done():
		timedOut = true
		abandon = fmt.Errorf("%w; the message may or may not have reached the broker: %w", p.conn.timeoutError(op.name, op.sentinel), messaging.ErrArrivalUnknown)
	}

	p.mu.Lock()
	if w.unanswered == 0 { // the last answers came in meanwhile
		p.mu.Unlock()
		return
	}
	w.abandoned = true
	for i := range w.results {
		// Sent and unanswered: every other result has an error or a confirm.
		if r := &w.results[i]; r.Err == nil && !r.Confirmed {
			r.Err = fmt.Errorf("message %s: %w", r.MessageID, abandon)
		}
	}
	p.mu.Unlock()
	if timedOut && !errors.Is(stop, op.sentinel) { // else a bounded wait of the write phase severed already
		p.conn.sever(op.name)
	}
}

// acquire takes a slot in the window of unconfirmed publishes. When the write's
// bound passes while it waits and the broker has sent no confirm since the write
// began (confirmsAtStart), the broker has stopped confirming: the slots will never
// free, so the connection is severed as for a confirm that never came.
func (p *publisher) acquire(ctx context.Context, op operation, bound, paused <-chan struct{}, confirmsAtStart uint64) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	var cause error
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-p.ended:
		return p.endedError()
	case <-paused:
		return p.pausedError()
	case <-ctx.Done():
		cause = ctx.Err()
	case <-bound:
		if p.confirmed.Load() == confirmsAtStart {
			p.conn.sever(op.name)
			return fmt.Errorf("the broker stopped confirming: %d publishes are waiting for a confirm on this channel and none arrived within [%s], so the connection was severed and this message was not sent; connect again: %w",
				cap(p.slots), p.config.brokerTimeout, op.sentinel)
		}
		cause = fmt.Errorf("waited the broker timeout of %s", p.config.brokerTimeout)
	}
	return fmt.Errorf("%d publishes are already waiting for a confirm on this channel and none completed in time (%w); the broker is not keeping up, so publish more slowly rather than buffering more (rabbitmq.Options.MaxOutstandingPublishes): %w",
		cap(p.slots), cause, messaging.ErrTooManyOutstanding)
}

func (p *publisher) release() { <-p.slots }

// pausedError is the connection's blocked error, even if the block lifted an
// instant after it was seen.
func (p *publisher) pausedError() error {
	if err := p.conn.pausedError(); err != nil {
		return err
	}
	return fmt.Errorf("the broker blocked this connection, so publishing paused: %w", messaging.ErrPublishingPaused)
}

// send writes message i of w as one basic.publish, within the write's bound,
// and registers it for its confirm. The slot it was given is released when it
// is not sent.
func (p *publisher) send(op operation, bound *writeBound, w *pendingWrite, i int) error {
	m := &w.messages[i]
	notSent := func(err error) error {
		return fmt.Errorf("message %s to exchange %q with key %q was not published: %w", m.id, m.exchange, m.key, err)
	}
	// Entered before the write lock: waiting for another write's publish is
	// waiting for the socket too.
	if !bound.enter() {
		p.release()
		p.conn.sever(op.name)
		return notSent(p.conn.timeoutError(op.name, op.sentinel))
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()

	seq := p.seq + 1
	p.mu.Lock()
	if p.endReason != nil {
		p.mu.Unlock()
		bound.leave()
		p.release()
		return p.endedError()
	}
	p.pending[seq] = inflight{write: w, index: i} // before the publish: its confirm may arrive before Publish returns
	w.unanswered++
	p.mu.Unlock()

	err := p.ch.Publish(m.exchange, m.key, m.mandatory, false, m.msg)
	timedOut := bound.leave()
	if err == nil {
		// On the wire, even if the bound passed meanwhile: its confirm
		// answers it, or the severed connection does (arrival unknown). It
		// keeps its delivery tag, as the channel counted it.
		p.seq = seq
		return nil
	}
	if timedOut {
		err = p.conn.timeoutError(op.name, op.sentinel)
	} else {
		err = p.conn.failure(op.name, err)
	}
	p.mu.Lock()
	_, registered := p.pending[seq]
	if registered {
		delete(p.pending, seq)
		w.unanswered--
	}
	p.mu.Unlock()
	if registered {
		p.release()
	}
	return notSent(err)
}

// drain answers each publish from its confirm and, for a mandatory message, the
// return the broker sent before that confirm.
func (p *publisher) drain(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(p.ended)
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			p.file(r)
		case c, ok := <-confirms:
			if !ok {
				p.fail(closes)
				return
			}
			// A return precedes its confirm on the wire and amqp091 hands both over
			// in that order, so any return for this confirm is already buffered.
			returns = p.fileBuffered(returns)
			p.settle(c)
		}
	}
}

func (p *publisher) fileBuffered(returns <-chan amqp.Return) <-chan amqp.Return {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				return nil
			}
			p.file(r)
		default:
			return returns
		}
	}
}

// file keeps a return until the confirm of its message claims it. Returns of one
// key queue in arrival order, which is publish order: the broker answers a
// channel's publishes in sequence. The oldest are dropped past the cap.
func (p *publisher) file(r amqp.Return) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := returnKey{id: returnedID(r), exchange: r.Exchange, key: r.RoutingKey}
	p.returned[k] = append(p.returned[k], r)
	p.returnOrder = append(p.returnOrder, k)
	limit := max(minimumUnclaimedReturns, cap(p.slots))
	for len(p.returnOrder) > limit {
		p.takeReturn(p.returnOrder[0])
	}
}

// returnedID is the id of the message a return gives back: its x-acemq-id
// header, which every message this transport publishes carries whole, else
// its message-id property (empty when the id was too long for one, as a
// Verbatim copy's may be).
func returnedID(r amqp.Return) string {
	if id := wire.Text(r.Headers[wire.HeaderID]); id != "" {
		return id
	}
	return r.MessageId
}

// claimReturn takes the oldest unclaimed return of a mandatory message's key. A
// message that was not mandatory is never returned, so it claims nothing.
func (p *publisher) claimReturn(m *outgoing) (amqp.Return, bool) {
	if !m.mandatory {
		return amqp.Return{}, false
	}
	return p.takeReturn(returnKey{id: m.id, exchange: m.exchange, key: m.key})
}

// takeReturn removes the oldest return of k.
func (p *publisher) takeReturn(k returnKey) (amqp.Return, bool) {
	queue := p.returned[k]
	if len(queue) == 0 {
		return amqp.Return{}, false
	}
	r := queue[0]
	if len(queue) == 1 {
		delete(p.returned, k)
	} else {
		p.returned[k] = queue[1:]
	}
	for i, filed := range p.returnOrder {
		if filed == k {
			p.returnOrder = append(p.returnOrder[:i], p.returnOrder[i+1:]...)
			break
		}
	}
	return r, true
}

func (p *publisher) settle(c amqp.Confirmation) {
	p.confirmed.Add(1)
	p.mu.Lock()
	f, ok := p.pending[c.DeliveryTag]
	if !ok {
		p.mu.Unlock()
		return
	}
	delete(p.pending, c.DeliveryTag)
	m := f.message()
	result := messaging.PublishResult{MessageID: m.id, Confirmed: c.Ack, Routed: c.Ack}
	r, returned := p.claimReturn(m) // a nack's return is discarded with it
	if !c.Ack {
		result.Err = fmt.Errorf("message %s to exchange %q with key %q was refused by the broker (basic.nack); publish it again or investigate the broker: %w", m.id, m.exchange, m.key, messaging.ErrRefused)
	} else if returned {
		result.Routed = false
		result.Err = fmt.Errorf("message %s to exchange %q with key %q reached no queue (%d %s); the broker dropped it: %w", m.id, m.exchange, m.key, r.ReplyCode, r.ReplyText, messaging.ErrUnroutable)
	}
	answerLocked(f, result)
	p.mu.Unlock()
	p.release()
}

// errChannelClosed is the reason given when a channel ended without the broker
// saying why.
var errChannelClosed = errors.New("the channel was closed")

// fail answers every pending publish once the channel has ended: their confirms
// are lost, so whether they arrived is unknown.
func (p *publisher) fail(closes <-chan *amqp.Error) {
	var reason error = errChannelClosed
	select {
	case err := <-closes:
		if err != nil {
			// A *messaging.BrokerError callers test with errors.Is; the
			// *amqp.Error stays in its chain.
			reason = refusal("publish", err, false)
		}
	default:
	}
	p.mu.Lock()
	p.endReason = reason
	pending := p.pending
	p.pending = map[uint64]inflight{}
	p.returned = map[returnKey][]amqp.Return{}
	p.returnOrder = nil
	for _, f := range pending {
		m := f.message()
		answerLocked(f, messaging.PublishResult{
			MessageID: m.id,
			Err: fmt.Errorf("message %s to exchange %q with key %q: the channel closed before the broker confirmed it (%w); it may or may not have reached the broker: %w",
				m.id, m.exchange, m.key, reason, messaging.ErrArrivalUnknown),
		})
	}
	p.mu.Unlock()
	for range pending {
		p.release()
	}
}

// usable returns why nothing can be published on the channel, or nil: the
// connection closed, or the channel ended.
func (p *publisher) usable() error {
	if err := p.conn.usable(); err != nil {
		return err
	}
	select {
	case <-p.ended:
		return p.endedError()
	default:
		return nil
	}
}

func (p *publisher) endedError() error {
	p.mu.Lock()
	reason := p.endReason
	p.mu.Unlock()
	if reason == nil {
		reason = errChannelClosed
	}
	return fmt.Errorf("the writer's channel has closed (%w); open a new writer: %w", reason, messaging.ErrClosed)
}

// close closes the channel within the broker timeout and waits for the drainer.
func (p *publisher) close() error {
	err := p.conn.closeChannel(p.ch)
	wait := newBound(p.config.brokerTimeout, nil)
	defer wait.Stop()
	select {
	case <-p.ended:
	case <-wait.Done():
		p.conn.sever("channel close")
		if err == nil {
			err = p.conn.timeoutError("channel close", ErrCloseTimeout)
		}
	}
	return err
}
