package transporttest

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// Decorator is one of the module's decorators of a transport, as
// RunCapabilities stacks it: Wrap returns a Connector over the one it is
// given, decorating what that connector opens.
type Decorator struct {
	Name string
	Wrap func(messaging.Connector) messaging.Connector
}

// RunCapabilities checks that a decorator never hides a capability of what it
// wraps: through each decorator alone, and through all of them stacked in the
// order given, messaging.As finds at every level (connector, connection,
// reader, stream, writer, commit writer) each optional interface the
// transport offers there, as the very value the transport offers, and the
// capabilities work through the stack (a Declarer declares, a Requeuer
// returns a delivery to its queue).
//
// So that every level has something to find, the suite puts a layer of its
// own beneath the decorators that offers a mark at each level; and while the
// transport's streams offer no messaging.Requeuer, that layer stands in for
// one, so the way through the decorators is checked before the transport
// offers the capability.
func RunCapabilities(t *testing.T, open func(t *testing.T) Target, decorators ...Decorator) {
	t.Helper()
	stacks := make([][]Decorator, 0, len(decorators)+1)
	for _, decorator := range decorators {
		stacks = append(stacks, []Decorator{decorator})
	}
	if len(decorators) > 1 {
		stacks = append(stacks, decorators)
	}
	for _, stack := range stacks {
		for _, behaviour := range []struct {
			name string
			test func(*capabilityHarness)
		}{
			{"EveryLevelKeepsTheCapabilitiesOfWhatItWraps", everyLevelKeepsItsCapabilities},
			{"TheDeclarerBeneathDeclares", declarerBeneathDeclares},
			{"TheRequeuerBeneathReturnsOneDelivery", requeuerBeneathRequeues},
		} {
			t.Run(stackName(stack)+"/"+behaviour.name, func(t *testing.T) {
				target := open(t)
				t.Cleanup(func() { _ = target.Connector.Close() })
				h := &harness{t: t, target: target}
				h.admin = h.adminDeclarer()
				behaviour.test(&capabilityHarness{harness: h, stack: stack})
			})
		}
	}
}

// stackName names a stack of decorators outermost first, as a test name.
func stackName(stack []Decorator) string {
	names := make([]string, len(stack))
	for i, decorator := range stack {
		names[len(stack)-1-i] = decorator.Name
	}
	return strings.Join(names, "+")
}

// capabilityHarness opens everything through the decorators of its stack,
// over the suite's marked layer over the transport.
type capabilityHarness struct {
	*harness
	stack []Decorator
}

// decorated returns the target's connector under the marked layer and the
// stack, outermost last.
func (h *capabilityHarness) decorated() messaging.Connector {
	connector := messaging.Connector(markedConnector{h.target.Connector})
	for _, decorator := range h.stack {
		connector = decorator.Wrap(connector)
	}
	return connector
}

// capabilities are the optional interfaces the suite looks for at a level.
type capabilities []capability

// capability is one optional interface, found with messaging.As.
type capability struct {
	name string
	find func(any) (any, bool)
}

func capabilityOf[T any](name string) capability {
	return capability{name: name, find: func(value any) (any, bool) {
		found, ok := messaging.As[T](value)
		return found, ok
	}}
}

// streamsSupporter is how a transport says whether it consumes stream queues
// (patterns/streams asks its connector or connection).
type streamsSupporter interface{ SupportsStreams() bool }

// rungDeclarer is handlers/deadletter's Declarer of broker retry rungs.
type rungDeclarer interface {
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}

var (
	connectorCapabilities  = capabilities{capabilityOf[streamsSupporter]("SupportsStreams")}
	connectionCapabilities = capabilities{
		capabilityOf[messaging.Declarer]("messaging.Declarer"),
		capabilityOf[rungDeclarer]("the retry-rung declarer"),
		capabilityOf[streamsSupporter]("SupportsStreams"),
	}
	streamCapabilities = capabilities{capabilityOf[messaging.Requeuer]("messaging.Requeuer")}
)

// keeps checks that through decorated, at one level, As finds the suite's
// mark and every capability the transport's value beneath it offers, as that
// very value; it logs what the transport offers.
func (h *capabilityHarness) keeps(level string, decorated any, wanted capabilities) {
	h.t.Helper()
	m, ok := messaging.As[marked](decorated)
	if !ok {
		h.t.Errorf("%s: messaging.As finds nothing beneath the %s %T: a decorator has no Unwrap returning what it wraps", stackName(h.stack), level, decorated)
		return
	}
	transport := m.beneath()
	var offered []string
	for _, c := range wanted {
		want, ok := c.find(transport)
		if !ok {
			continue
		}
		offered = append(offered, c.name)
		got, ok := c.find(decorated)
		switch {
		case !ok:
			h.t.Errorf("%s: the transport's %s %T is a %s, but messaging.As does not find it through %T", stackName(h.stack), level, transport, c.name, decorated)
		case !same(got, want):
			h.t.Errorf("%s: through the %s %T messaging.As finds a %s of %T, not the transport's %T", stackName(h.stack), level, decorated, c.name, got, want)
		}
	}
	h.t.Logf("%s %T over the transport's %T: found beneath it: the mark%s", level, decorated, transport, listed(offered))
}

func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ", " + strings.Join(names, ", ")
}

// same reports whether a and b are one value (pointers to one transport value).
func same(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

func everyLevelKeepsItsCapabilities(h *capabilityHarness) {
	connector := h.decorated()
	h.keeps("connector", connector, connectorCapabilities)
	conn := opened(h, "connection", connector.Connect)
	h.keeps("connection", conn, connectionCapabilities)
	reader := opened(h, "reader", conn.Reader)
	h.keeps("reader", reader, nil)
	config := messaging.StreamConfig{StreamName: h.queue(), EstablishTopology: true, BufferCapacity: 1}
	stream := opened(h, "stream", func(ctx context.Context) (messaging.Stream, error) { return reader.Stream(ctx, config) })
	h.keeps("stream", stream, streamCapabilities)
	h.keeps("writer", opened(h, "writer", conn.Writer), nil)
	h.keeps("commit writer", opened(h, "commit writer", conn.CommitWriter), nil)
}

// opened opens what through the stack, closed when the test ends.
func opened[T io.Closer](h *capabilityHarness, what string, open func(context.Context) (T, error)) T {
	h.t.Helper()
	value, err := open(h.context())
	if err != nil {
		h.t.Fatalf("open a %s through %s: %v", what, stackName(h.stack), err)
	}
	h.t.Cleanup(func() { _ = value.Close() })
	return value
}

func declarerBeneathDeclares(h *capabilityHarness) {
	conn := h.connectThrough()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		h.t.Fatalf("%s: messaging.As finds no Declarer through %T", stackName(h.stack), conn)
	}
	queue := h.queue()
	if err := declarer.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare %s through %s: %v", queue, stackName(h.stack), err)
	}
	state, err := h.admin.InspectQueue(h.context(), queue)
	if err != nil {
		h.t.Fatalf("the queue %s declared through %s is not there: %v", queue, stackName(h.stack), err)
	}
	if state.Name != queue {
		h.t.Fatalf("inspecting %s found %q", queue, state.Name)
	}
}

func requeuerBeneathRequeues(h *capabilityHarness) {
	conn := h.connectThrough()
	queue := h.queue()
	stream := h.declared(conn, queue, 2)
	id := messaging.NewID()
	h.write(conn, messaging.Dispatch{RoutingKey: queue, MessageID: id, Payload: []byte("requeue me"), Mandatory: true})
	first := h.read(stream)
	requeuer, ok := messaging.As[messaging.Requeuer](stream)
	if !ok {
		h.t.Fatalf("%s: messaging.As finds no Requeuer through the stream %T", stackName(h.stack), stream)
	}
	if err := requeuer.Requeue(h.context(), first); err != nil {
		h.t.Fatalf("requeue %s through %s: %v", id, stackName(h.stack), err)
	}
	if standIn, ok := requeuer.(*requeuingStream); ok {
		h.t.Log("the transport's streams offer no messaging.Requeuer yet: the suite's stand-in took the call")
		if got := standIn.requeued(); len(got) != 1 || got[0].MessageID != id || got[0].DeliveryID != first.DeliveryID {
			h.t.Fatalf("the stand-in Requeuer beneath %s received %+v; want the one delivery %s", stackName(h.stack), got, id)
		}
		return
	}
	again := h.read(stream)
	if again.MessageID != id || !again.Redelivered {
		h.t.Fatalf("after Requeue through %s read %q (redelivered %v); want %s again, redelivered", stackName(h.stack), again.MessageID, again.Redelivered, id)
	}
	h.acknowledge(stream, again)
	h.nothing(stream)
}

// connectThrough opens a connection through the stack, closed at the end.
func (h *capabilityHarness) connectThrough() messaging.Connection {
	h.t.Helper()
	return opened(h, "connection", h.decorated().Connect)
}

// marked is the suite's layer beneath the decorators; beneath returns the
// transport's value it wraps.
type marked interface{ beneath() any }

type markedConnector struct{ messaging.Connector }

func (c markedConnector) beneath() any                { return c.Connector }
func (c markedConnector) Unwrap() messaging.Connector { return c.Connector }

func (c markedConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return markedConnection{conn}, nil
}

type markedConnection struct{ messaging.Connection }

func (c markedConnection) beneath() any                 { return c.Connection }
func (c markedConnection) Unwrap() messaging.Connection { return c.Connection }

func (c markedConnection) Reader(ctx context.Context) (messaging.Reader, error) {
	reader, err := c.Connection.Reader(ctx)
	if err != nil {
		return nil, err
	}
	return markedReader{reader}, nil
}

func (c markedConnection) Writer(ctx context.Context) (messaging.Writer, error) {
	writer, err := c.Connection.Writer(ctx)
	if err != nil {
		return nil, err
	}
	return markedWriter{writer}, nil
}

func (c markedConnection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	writer, err := c.Connection.CommitWriter(ctx)
	if err != nil {
		return nil, err
	}
	return markedCommitWriter{writer}, nil
}

type markedReader struct{ messaging.Reader }

func (r markedReader) beneath() any             { return r.Reader }
func (r markedReader) Unwrap() messaging.Reader { return r.Reader }

// Stream marks the transport's stream; one that is no Requeuer gets the
// suite's stand-in.
func (r markedReader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	stream, err := r.Reader.Stream(ctx, config)
	if err != nil {
		return nil, err
	}
	if _, ok := messaging.As[messaging.Requeuer](stream); ok {
		return markedStream{stream}, nil
	}
	return &requeuingStream{markedStream: markedStream{stream}}, nil
}

type markedStream struct{ messaging.Stream }

func (s markedStream) beneath() any             { return s.Stream }
func (s markedStream) Unwrap() messaging.Stream { return s.Stream }

// requeuingStream stands in for a transport's Requeuer: it records the
// deliveries it is asked to requeue.
type requeuingStream struct {
	markedStream
	calls []messaging.Delivery
}

func (s *requeuingStream) beneath() any { return s }

// Requeue records delivery; the transport beneath is not told.
func (s *requeuingStream) Requeue(_ context.Context, delivery messaging.Delivery) error {
	s.calls = append(s.calls, delivery)
	return nil
}

func (s *requeuingStream) requeued() []messaging.Delivery { return s.calls }

type markedWriter struct{ messaging.Writer }

func (w markedWriter) beneath() any             { return w.Writer }
func (w markedWriter) Unwrap() messaging.Writer { return w.Writer }

type markedCommitWriter struct{ messaging.CommitWriter }

func (w markedCommitWriter) beneath() any                   { return w.CommitWriter }
func (w markedCommitWriter) Unwrap() messaging.CommitWriter { return w.CommitWriter }
