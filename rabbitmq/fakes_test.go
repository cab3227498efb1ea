package rabbitmq

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// waitLimit bounds how long a test waits for the code under test to reach a
// point; reaching it is the assertion, so the limit only turns a hang into a failure.
const waitLimit = 5 * time.Second

// tb is the part of testing.T and gunit.TestingT the helpers use.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func receive[T any](t tb, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// inBubble and pass are the transport suite's bubble helpers.
func inBubble[F any](t gunit.TestingT, fixture *F, setup, teardown, test func()) {
	transporttest.InBubble(t, fixture, setup, teardown, test)
}

var pass = transporttest.Pass

// fakeDialer hands out fake connections, or fails, or blocks until ctx ends.
type fakeDialer struct {
	mu          sync.Mutex
	err         error
	failFor     map[string]error // per address, checked before err
	block       bool
	gate        chan struct{} // when set, a dial waits for it to close before it answers
	dialing     chan struct{}
	configs     []amqp.Config
	addresses   []string
	connections []*fakeConnection
}

func newFakeDialer() *fakeDialer { return &fakeDialer{dialing: make(chan struct{}, 100)} }

func (d *fakeDialer) Dial(ctx context.Context, address string, config amqp.Config) (adapter.Connection, error) {
	d.mu.Lock()
	d.configs = append(d.configs, config)
	d.addresses = append(d.addresses, address)
	err, block, gate := d.err, d.block, d.gate
	if failed, ok := d.failFor[address]; ok {
		err = failed
	}
	d.mu.Unlock()
	d.dialing <- struct{}{}
	if gate != nil {
		<-gate
	}
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	conn := newFakeConnection()
	d.mu.Lock()
	d.connections = append(d.connections, conn)
	d.mu.Unlock()
	return conn, nil
}

func (d *fakeDialer) last() *fakeConnection {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.connections[len(d.connections)-1]
}

// fakeConnection mimics amqp091's notifications; calls configured to block
// return only when the connection is severed.
type fakeConnection struct {
	mu         sync.Mutex
	closes     []chan *amqp.Error
	blocks     []chan amqp.Blocking
	channels   []*fakeChannel
	opened     chan *fakeChannel
	severed    chan struct{}
	severOnce  sync.Once
	shutOnce   sync.Once
	blockClose bool
	blockOpen  bool
	dropped    error // when set, every call fails with it and no close is notified
	closeCalls int
	prepare    func(*fakeChannel) // when set, applied to each new channel before it is handed out
}

func newFakeConnection() *fakeConnection {
	return &fakeConnection{severed: make(chan struct{}), opened: make(chan *fakeChannel, 100)}
}

func (c *fakeConnection) Channel() (adapter.Channel, error) {
	c.mu.Lock()
	blockOpen, dropped := c.blockOpen, c.dropped
	c.mu.Unlock()
	if dropped != nil {
		return nil, dropped
	}
	if blockOpen {
		<-c.severed
		return nil, amqp.ErrClosed
	}
	select {
	case <-c.severed:
		return nil, amqp.ErrClosed
	default:
	}
	ch := newFakeChannel(c)
	c.mu.Lock()
	c.channels = append(c.channels, ch)
	prepare := c.prepare
	c.mu.Unlock()
	if prepare != nil {
		prepare(ch)
	}
	c.opened <- ch
	return ch, nil
}

func (c *fakeConnection) NotifyClose(receiver chan *amqp.Error) chan *amqp.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes = append(c.closes, receiver)
	return receiver
}

func (c *fakeConnection) NotifyBlocked(receiver chan amqp.Blocking) chan amqp.Blocking {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks = append(c.blocks, receiver)
	return receiver
}

func (c *fakeConnection) Close() error {
	c.mu.Lock()
	c.closeCalls++
	blockClose := c.blockClose
	c.mu.Unlock()
	if blockClose {
		<-c.severed
		return amqp.ErrClosed
	}
	c.shutdown(nil)
	return nil
}

func (c *fakeConnection) Sever() error {
	c.severOnce.Do(func() { close(c.severed) })
	c.shutdown(&amqp.Error{Code: amqp.FrameError, Reason: "connection reset by test"})
	return nil
}

func (c *fakeConnection) isSevered() bool {
	select {
	case <-c.severed:
		return true
	default:
		return false
	}
}

// Drop makes every later call on the connection and its channels fail with
// err, as amqp091's calls do once the connection has closed, before its close
// notification has been delivered.
func (c *fakeConnection) Drop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropped = err
	for _, ch := range c.channels {
		ch.mu.Lock()
		ch.dropped = err
		ch.mu.Unlock()
	}
}

// BrokerClose closes the connection as the broker would, with a reason.
func (c *fakeConnection) BrokerClose(reason string) {
	c.shutdown(&amqp.Error{Code: amqp.ConnectionForced, Reason: reason, Server: true})
}

func (c *fakeConnection) shutdown(err *amqp.Error) {
	c.shutOnce.Do(func() {
		c.mu.Lock()
		channels, closes, blocks := c.channels, c.closes, c.blocks
		c.mu.Unlock()
		for _, ch := range channels {
			ch.shutdown(err)
		}
		for _, l := range closes {
			if err != nil {
				l <- err
			}
			close(l)
		}
		for _, l := range blocks {
			close(l)
		}
	})
}

func (c *fakeConnection) Block(active bool, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.blocks {
		l <- amqp.Blocking{Active: active, Reason: reason}
	}
}

type fakePublish struct {
	exchange, key string
	mandatory     bool
	msg           amqp.Publishing
}

type fakeAck struct {
	tag      uint64
	multiple bool
}

type fakeNack struct {
	tag               uint64
	multiple, requeue bool
}

type fakeCall struct {
	method string
	args   []any
}

// fakeChannel records what the transport asks of it and lets the test answer
// with confirms, returns, deliveries and a close.
type fakeChannel struct {
	conn      *fakeConnection
	published chan fakePublish
	acked     chan fakeAck
	nacked    chan fakeNack

	mu         sync.Mutex
	confirms   []chan amqp.Confirmation
	returns    []chan amqp.Return
	closes     []chan *amqp.Error
	deliveries chan amqp.Delivery
	calls      []fakeCall
	blocking   map[string]bool
	failing    map[string]error
	closed     bool
	dropped    error  // Drop
	written    func() // AfterPublish
	shutOnce   sync.Once
}

func newFakeChannel(conn *fakeConnection) *fakeChannel {
	return &fakeChannel{
		conn:       conn,
		published:  make(chan fakePublish, 10_000),
		acked:      make(chan fakeAck, 10_000),
		nacked:     make(chan fakeNack, 10_000),
		deliveries: make(chan amqp.Delivery, 100),
		blocking:   map[string]bool{},
		failing:    map[string]error{},
	}
}

// enter records a call and blocks it until the connection is severed when the
// test asked for that.
func (ch *fakeChannel) enter(method string, args ...any) error {
	ch.mu.Lock()
	ch.calls = append(ch.calls, fakeCall{method: method, args: args})
	block, fail, closed, dropped := ch.blocking[method], ch.failing[method], ch.closed, ch.dropped
	ch.mu.Unlock()
	if dropped != nil {
		return dropped
	}
	if block {
		<-ch.conn.severed
		return amqp.ErrClosed
	}
	if closed {
		return amqp.ErrClosed
	}
	return fail
}

func (ch *fakeChannel) Block(method string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.blocking[method] = true
}

// Fail makes every later call of method return err.
func (ch *fakeChannel) Fail(method string, err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.failing[method] = err
}

func (ch *fakeChannel) Calls() []fakeCall {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return append([]fakeCall(nil), ch.calls...)
}

func (ch *fakeChannel) Confirm(noWait bool) error { return ch.enter("Confirm", noWait) }

func (ch *fakeChannel) NotifyPublish(c chan amqp.Confirmation) chan amqp.Confirmation {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.confirms = append(ch.confirms, c)
	return c
}

func (ch *fakeChannel) NotifyReturn(c chan amqp.Return) chan amqp.Return {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.returns = append(ch.returns, c)
	return c
}

func (ch *fakeChannel) NotifyClose(c chan *amqp.Error) chan *amqp.Error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.closes = append(ch.closes, c)
	return c
}

func (ch *fakeChannel) Publish(exchange, key string, mandatory, _ bool, msg amqp.Publishing) error {
	if err := ch.enter("Publish", exchange, key); err != nil {
		return err
	}
	ch.published <- fakePublish{exchange: exchange, key: key, mandatory: mandatory, msg: msg}
	ch.mu.Lock()
	written := ch.written
	ch.mu.Unlock()
	if written != nil {
		written()
	}
	return nil
}

// AfterPublish runs written after each publish has reached the socket,
// before Publish returns (a confirm or a timer arriving in that window).
func (ch *fakeChannel) AfterPublish(written func()) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.written = written
}

func (ch *fakeChannel) ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	return ch.enter("ExchangeDeclare", name, kind, durable, autoDelete, internal, args)
}

func (ch *fakeChannel) QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	return amqp.Queue{Name: name}, ch.enter("QueueDeclare", name, durable, autoDelete, exclusive, args)
}

func (ch *fakeChannel) ExchangeDeclarePassive(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	return ch.enter("ExchangeDeclarePassive", name, kind, durable, autoDelete, internal, args)
}

func (ch *fakeChannel) ExchangeDelete(name string, ifUnused, noWait bool) error {
	return ch.enter("ExchangeDelete", name)
}

func (ch *fakeChannel) QueueDeclarePassive(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	return amqp.Queue{Name: name}, ch.enter("QueueDeclarePassive", name, durable, autoDelete, exclusive, args)
}

func (ch *fakeChannel) QueueDelete(name string, ifUnused, ifEmpty, noWait bool) (int, error) {
	return 0, ch.enter("QueueDelete", name)
}

// Get takes what Deliver queued, without waiting: none is an empty queue.
func (ch *fakeChannel) Get(queue string, autoAck bool) (amqp.Delivery, bool, error) {
	if err := ch.enter("Get", queue, autoAck); err != nil {
		return amqp.Delivery{}, false, err
	}
	select {
	case d := <-ch.deliveries:
		return d, true, nil
	default:
		return amqp.Delivery{}, false, nil
	}
}

func (ch *fakeChannel) QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error {
	if args != nil {
		return ch.enter("QueueBind", name, key, exchange, args)
	}
	return ch.enter("QueueBind", name, key, exchange)
}

func (ch *fakeChannel) Qos(prefetchCount, prefetchSize int, global bool) error {
	return ch.enter("Qos", prefetchCount, prefetchSize, global)
}

func (ch *fakeChannel) Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error) {
	if err := ch.enter("Consume", queue, consumer, autoAck, args); err != nil {
		return nil, err
	}
	return ch.deliveries, nil
}

func (ch *fakeChannel) Cancel(consumer string, noWait bool) error {
	return ch.enter("Cancel", consumer)
}

func (ch *fakeChannel) Ack(tag uint64, multiple bool) error {
	if err := ch.enter("Ack", tag, multiple); err != nil {
		return err
	}
	ch.acked <- fakeAck{tag: tag, multiple: multiple}
	return nil
}

func (ch *fakeChannel) Nack(tag uint64, multiple, requeue bool) error {
	if err := ch.enter("Nack", tag, multiple, requeue); err != nil {
		return err
	}
	ch.nacked <- fakeNack{tag: tag, multiple: multiple, requeue: requeue}
	return nil
}

func (ch *fakeChannel) Close() error {
	if err := ch.enter("Close"); err != nil {
		return err
	}
	ch.shutdown(nil)
	return nil
}

// Answer sends a confirm for tag.
func (ch *fakeChannel) Answer(tag uint64, ack bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, c := range ch.confirms {
		c <- amqp.Confirmation{DeliveryTag: tag, Ack: ack}
	}
}

// Return sends a basic.return for the message with id.
func (ch *fakeChannel) Return(id, exchange, key string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, c := range ch.returns {
		c <- amqp.Return{ReplyCode: amqp.NoRoute, ReplyText: "NO_ROUTE", Exchange: exchange, RoutingKey: key, MessageId: id}
	}
}

// ReturnPublished sends the basic.return the broker sends for a mandatory
// publish that reached no queue: with the message's own properties and
// headers.
func (ch *fakeChannel) ReturnPublished(p fakePublish) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, c := range ch.returns {
		c <- amqp.Return{ReplyCode: amqp.NoRoute, ReplyText: "NO_ROUTE", Exchange: p.exchange, RoutingKey: p.key,
			MessageId: p.msg.MessageId, Headers: p.msg.Headers}
	}
}

// Deliver hands the consumer a delivery.
func (ch *fakeChannel) Deliver(d amqp.Delivery) { ch.deliveries <- d }

// BrokerClose closes the channel as the broker would, with a reason.
func (ch *fakeChannel) BrokerClose(code int, reason string) {
	ch.shutdown(&amqp.Error{Code: code, Reason: reason, Server: true})
}

func (ch *fakeChannel) shutdown(err *amqp.Error) {
	ch.shutOnce.Do(func() {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		ch.closed = true
		for _, c := range ch.closes {
			if err != nil {
				c <- err
			}
			close(c)
		}
		for _, c := range ch.returns {
			close(c)
		}
		for _, c := range ch.confirms {
			close(c)
		}
		close(ch.deliveries)
	})
}

// recordingMonitor records every callback.
type recordingMonitor struct {
	mu     sync.Mutex
	events []string
	errs   []error
	signal chan string
}

func newRecordingMonitor() *recordingMonitor {
	return &recordingMonitor{signal: make(chan string, 10_000)}
}

func (m *recordingMonitor) record(event string, err error) {
	m.mu.Lock()
	m.events = append(m.events, event)
	m.errs = append(m.errs, err)
	m.mu.Unlock()
	m.signal <- event
}

func (m *recordingMonitor) Events() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.events...)
}

func (m *recordingMonitor) Errors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.errs...)
}

func (m *recordingMonitor) ConnectionOpened(err error)      { m.record("opened", err) }
func (m *recordingMonitor) ConnectionClosed()               { m.record("closed", nil) }
func (m *recordingMonitor) ConnectionBlocked(reason string) { m.record("blocked:"+reason, nil) }
func (m *recordingMonitor) ConnectionUnblocked()            { m.record("unblocked", nil) }
func (m *recordingMonitor) DispatchPublished()              { m.record("published", nil) }
func (m *recordingMonitor) TransactionCommitted(err error)  { m.record("committed", err) }
func (m *recordingMonitor) TransactionRolledBack(err error) { m.record("rolledback", err) }

// await waits until the monitor reports event.
func (m *recordingMonitor) await(t tb, event string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case got := <-m.signal:
			if got == event {
				return
			}
		case <-deadline:
			t.Fatalf("monitor never reported %q; saw %v", event, m.Events())
		}
	}
}

// harness wires a connector to fakes.
type harness struct {
	dialer  *fakeDialer
	monitor *recordingMonitor
	logs    *testenv.LogBuffer
}

func newHarness() *harness {
	return &harness{dialer: newFakeDialer(), monitor: newRecordingMonitor(), logs: &testenv.LogBuffer{}}
}

func (h *harness) options(extra ...Option) []Option {
	return append([]Option{
		Options.Dialer(h.dialer),
		Options.Monitor(h.monitor),
		Options.Logger(slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		Options.Origin("tests@host"),
	}, extra...)
}

var errTest = errors.New("test failure")

func returnFor(id string) amqp.Return {
	return amqp.Return{ReplyCode: amqp.NoRoute, ReplyText: "NO_ROUTE", MessageId: id}
}
