// Package transporttest is a conformance suite for messaging.Connector
// implementations: the behaviours the RabbitMQ and in-memory transports share
// (routing through a topic to a bound queue, honest unroutable errors, requeue
// order, one delivery requeued alone, redeclare mismatches, the envelope round
// trip, prefetch, CommitWriter commit and rollback, and the wire limits that
// refuse one dispatch alone). Each transport's tests call Run.
package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// Target is one transport under test: a fresh connector, whose connections
// must implement messaging.Declarer (the suite arranges and cleans up the
// broker through it). The suite closes the connector when a test ends.
type Target struct {
	Connector messaging.Connector
	// MaxPayload is the largest payload the connector was configured to send
	// (its MaxMessageSize option); keep it small so the suite's over-limit
	// payload is cheap.
	MaxPayload int
}

// Run runs every behaviour of the suite as a subtest; open is called once per
// subtest and may register its own cleanups on the t it is given.
func Run(t *testing.T, open func(t *testing.T) Target) {
	t.Helper()
	for _, behaviour := range append([]struct {
		name string
		test func(*harness)
	}{
		{"RoutesThroughFanoutTopicToBoundQueue", routesThroughTopic},
		{"RoutesThroughDefaultExchangeByQueueName", routesThroughDefaultExchange},
		{"MandatoryUnroutableFailsNamingExchangeAndKey", mandatoryUnroutable},
		{"NonMandatoryUnroutableIsDroppedSilently", nonMandatoryUnroutable},
		{"UnacknowledgedComeBackFirstInOrderMarkedRedelivered", requeueOrder},
		{"ConnectionCloseRequeuesUnacknowledged", connectionCloseRequeues},
		{"RequeueReturnsOneDeliveryWhileTheStreamGoesOn", requeueOne},
		{"AStreamOverAQueueDeclaredDifferentlyUsesItAsItIs", redeclareMismatch},
		{"EnvelopeRoundTrip", envelopeRoundTrip},
		{"EnvelopeDefaults", envelopeDefaults},
		{"PrefetchBoundsUnacknowledged", prefetchBound},
		{"CommitWriterRollbackPublishesNothing", commitWriterRollback},
		{"ConsumingUndeclaredQueueFails", consumeUndeclared},
		{"TopicExchangeRoutesWordByWord", topicRouting},
		{"DirectExchangeRoutesOnTheExactKey", directRouting},
		{"PublishingToAnUndeclaredExchangeFailsNotFound", undeclaredExchange},
		{"ReservedHeaderRefusesThatDispatchAlone", reservedHeader},
		{"AFieldOverItsWireLimitIsRefusedAloneAndTheOthersArePublished", wireLimitRefusesAlone},
		{"ACommitRefusesAFieldOverItsWireLimitAloneAndPublishesTheOthers", wireLimitRefusesAloneOnCommit},
		{"AVerbatimCopyWithOverLongEnvelopeValuesTravelsWhole", verbatimCopyTravels},
		{"AnUnroutableVerbatimCopyWithAnOverLongIDIsReportedUnroutable", verbatimCopyUnroutable},
		{"ExclusiveQueueIsLockedToItsConnection", exclusiveQueue},
		{"ClosedStreamsAndWritersFailClosed", closedFailClosed},
		{"AcknowledgingAnUnknownDeliveryAcknowledgesNone", unknownAcknowledgement},
	}, append(topologyBehaviours, streamConfigBehaviours...)...) {
		t.Run(behaviour.name, func(t *testing.T) {
			target := open(t)
			t.Cleanup(func() { _ = target.Connector.Close() })
			h := &harness{t: t, target: target}
			h.admin = h.adminDeclarer()
			behaviour.test(h)
		})
	}
}

// wait bounds every step of the suite, so a broken transport fails instead of hanging.
const wait = 10 * time.Second

// quiet is how long the suite waits to be sure nothing more is delivered.
const quiet = 300 * time.Millisecond

type harness struct {
	t      *testing.T
	target Target
	// admin declares and deletes on a connection of its own, open until every
	// cleanup that deletes has run.
	admin messaging.Declarer
}

// adminDeclarer opens the harness's own connection and finds its Declarer.
func (h *harness) adminDeclarer() messaging.Declarer {
	h.t.Helper()
	conn, err := h.target.Connector.Connect(h.context())
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { _ = conn.Close() }) // before the deleting cleanups, so it runs after them
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		h.t.Fatalf("the connection %T implements no messaging.Declarer", conn)
	}
	return declarer
}

// declarer finds conn's Declarer or fails the test.
func (h *harness) declarer(conn messaging.Connection) messaging.Declarer {
	h.t.Helper()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		h.t.Fatalf("the connection %T implements no messaging.Declarer", conn)
	}
	return declarer
}

// declareExchange declares a durable exchange of kind through the admin connection.
func (h *harness) declareExchange(name string, kind messaging.ExchangeKind) {
	h.t.Helper()
	if err := h.admin.DeclareExchange(h.context(), messaging.Exchange{Name: name, Kind: kind, Durable: true}); err != nil {
		h.t.Fatalf("declare %s exchange %s: %v", kind, name, err)
	}
}

// bind binds queue to exchange under key through the admin connection.
func (h *harness) bind(queue, exchange, key string) {
	h.t.Helper()
	if err := h.admin.Bind(h.context(), messaging.Binding{Exchange: exchange, Queue: queue, Key: key}); err != nil {
		h.t.Fatalf("bind %s to %s with %q: %v", queue, exchange, key, err)
	}
}

func (h *harness) context() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	h.t.Cleanup(cancel)
	return ctx
}

// queue returns a fresh queue name, deleted with its side queues at the end.
func (h *harness) queue() string {
	name := testenv.Name(h.t, "q")
	h.t.Cleanup(func() {
		for _, q := range []string{name, name + ".dlq", name + ".parked"} {
			if err := h.admin.DeleteQueue(context.Background(), q); err != nil {
				h.t.Errorf("delete queue %s: %v", q, err)
			}
		}
	})
	return name
}

// exchange returns a fresh exchange name, deleted at the end.
func (h *harness) exchange() string {
	name := testenv.Name(h.t, "x")
	h.t.Cleanup(func() {
		if err := h.admin.DeleteExchange(context.Background(), name); err != nil {
			h.t.Errorf("delete exchange %s: %v", name, err)
		}
	})
	return name
}

func (h *harness) connect() messaging.Connection {
	h.t.Helper()
	conn, err := h.target.Connector.Connect(h.context())
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func (h *harness) stream(conn messaging.Connection, config messaging.StreamConfig) messaging.Stream {
	h.t.Helper()
	s, err := h.openStream(conn, config)
	if err != nil {
		h.t.Fatalf("open stream %s: %v", config.StreamName, err)
	}
	return s
}

func (h *harness) openStream(conn messaging.Connection, config messaging.StreamConfig) (messaging.Stream, error) {
	h.t.Helper()
	r, err := conn.Reader(h.context())
	if err != nil {
		h.t.Fatalf("open reader: %v", err)
	}
	h.t.Cleanup(func() { _ = r.Close() })
	s, err := r.Stream(h.context(), config)
	if err != nil {
		return nil, err
	}
	h.t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

// declared opens a stream that declares queue (bound to topics) and consumes it.
func (h *harness) declared(conn messaging.Connection, queue string, prefetch uint16, topics ...string) messaging.Stream {
	h.t.Helper()
	return h.stream(conn, messaging.StreamConfig{
		StreamName:        queue,
		Topics:            topics,
		EstablishTopology: true,
		BufferCapacity:    prefetch,
		BatchCapacity:     prefetch,
	})
}

// openWriter opens a writer on conn, failing the test when it cannot; the
// caller closes it.
func (h *harness) openWriter(conn messaging.Connection) messaging.Writer {
	h.t.Helper()
	return mustOpen(h, "writer", conn.Writer)
}

// openCommitWriter opens a commit writer on conn, failing the test when it
// cannot; the caller closes it.
func (h *harness) openCommitWriter(conn messaging.Connection) messaging.CommitWriter {
	h.t.Helper()
	return mustOpen(h, "commit writer", conn.CommitWriter)
}

// mustOpen returns what open opened, failing the test when it could not.
func mustOpen[W any](h *harness, what string, open func(context.Context) (W, error)) W {
	h.t.Helper()
	w, err := open(h.context())
	if err != nil {
		h.t.Fatalf("open %s: %v", what, err)
	}
	return w
}

func (h *harness) write(conn messaging.Connection, dispatches ...messaging.Dispatch) {
	h.t.Helper()
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	n, err := w.Write(h.context(), dispatches...)
	if err != nil || n != len(dispatches) {
		h.t.Fatalf("write %d dispatch(es): wrote %d, %v", len(dispatches), n, err)
	}
}

func (h *harness) read(s messaging.Stream) messaging.Delivery {
	h.t.Helper()
	var d messaging.Delivery
	if err := s.Read(h.context(), &d); err != nil {
		h.t.Fatalf("read: %v", err)
	}
	return d
}

// nothing asserts that no delivery arrives within quiet.
func (h *harness) nothing(s messaging.Stream) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quiet)
	defer cancel()
	var d messaging.Delivery
	if err := s.Read(ctx, &d); err == nil {
		h.t.Fatalf("expected no delivery, got %q (payload %q)", d.MessageID, d.Payload)
	}
}

func (h *harness) acknowledge(s messaging.Stream, deliveries ...messaging.Delivery) {
	h.t.Helper()
	if err := s.Acknowledge(h.context(), deliveries...); err != nil {
		h.t.Fatalf("acknowledge %d: %v", len(deliveries), err)
	}
}

func toQueue(queue, payload string) messaging.Dispatch {
	return messaging.Dispatch{RoutingKey: queue, Payload: []byte(payload), Mandatory: true}
}
