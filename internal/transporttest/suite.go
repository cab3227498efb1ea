// Package transporttest is a conformance suite for messaging.Connector
// implementations: the behaviours the RabbitMQ and in-memory transports share
// (routing through a topic to a bound queue, honest unroutable errors, requeue
// order, redeclare mismatches, the envelope round trip, prefetch, CommitWriter
// commit and rollback, and the wire limits that refuse one dispatch alone). Each transport's tests call Run.
package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// Topology arranges and cleans up the broker behind a transport, for what the
// Connector contract cannot do itself.
type Topology interface {
	// DeclareExchange declares an exchange of kind direct, topic or fanout.
	DeclareExchange(name, kind string, durable bool) error
	// Bind binds a declared queue to a declared exchange with a key.
	Bind(queue, exchange, key string) error
	// DeleteQueue deletes a queue; deleting a missing one succeeds.
	DeleteQueue(name string) error
	// DeleteExchange deletes an exchange; deleting a missing one succeeds.
	DeleteExchange(name string) error
}

// Target is one transport under test: a fresh connector and the topology
// helper for the same broker. The suite closes the connector when a test ends.
type Target struct {
	Connector messaging.Connector
	Topology  Topology
	// MaxPayload is the largest payload the connector was configured to send
	// (its MaxMessageSize option); keep it small so the suite's over-limit
	// payload is cheap.
	MaxPayload int
}

// Run runs every behaviour of the suite as a subtest; open is called once per
// subtest and may register its own cleanups on the t it is given.
func Run(t *testing.T, open func(t *testing.T) Target) {
	t.Helper()
	for _, behaviour := range []struct {
		name string
		test func(*harness)
	}{
		{"RoutesThroughFanoutTopicToBoundQueue", routesThroughTopic},
		{"RoutesThroughDefaultExchangeByQueueName", routesThroughDefaultExchange},
		{"MandatoryUnroutableFailsNamingExchangeAndKey", mandatoryUnroutable},
		{"NonMandatoryUnroutableIsDroppedSilently", nonMandatoryUnroutable},
		{"UnacknowledgedComeBackFirstInOrderMarkedRedelivered", requeueOrder},
		{"ConnectionCloseRequeuesUnacknowledged", connectionCloseRequeues},
		{"RedeclareWithReplicationFailsPreconditionFailed", redeclareMismatch},
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
		{"ExclusiveQueueIsLockedToItsConnection", exclusiveQueue},
		{"ClosedStreamsAndWritersFailClosed", closedFailClosed},
		{"AcknowledgingAnUnknownDeliveryAcknowledgesNone", unknownAcknowledgement},
	} {
		t.Run(behaviour.name, func(t *testing.T) {
			target := open(t)
			t.Cleanup(func() { _ = target.Connector.Close() })
			behaviour.test(&harness{t: t, target: target})
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
			if err := h.target.Topology.DeleteQueue(q); err != nil {
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
		if err := h.target.Topology.DeleteExchange(name); err != nil {
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

func (h *harness) write(conn messaging.Connection, dispatches ...messaging.Dispatch) {
	h.t.Helper()
	w, err := conn.Writer(h.context())
	if err != nil {
		h.t.Fatalf("open writer: %v", err)
	}
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
