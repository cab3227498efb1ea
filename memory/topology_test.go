package memory

import (
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestTopologyFixture(t *testing.T) {
	gunit.Run(new(TopologyFixture), t)
}

type TopologyFixture struct {
	*gunit.Fixture
	*world
}

func (f *TopologyFixture) Setup()    { f.world = newWorld(f.Fixture) }
func (f *TopologyFixture) Teardown() { f.world.close() }

func (f *TopologyFixture) code(err error) int {
	var refused *messaging.BrokerError
	if errors.As(err, &refused) {
		return refused.Code
	}
	return 0
}

func (f *TopologyFixture) TestDirectExchangeRoutesOnTheExactKey() {
	f.So(f.broker.DeclareExchange("orders", KindDirect, true), should.BeNil)
	f.queue("placed")
	f.queue("any")
	f.So(f.broker.Bind("placed", "orders", "order.placed"), should.BeNil)

	f.So(f.broker.Publish(f.ctx, ctxDispatch("orders", "order.placed")), should.BeNil)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("orders", "order.*")), should.BeNil)

	f.So(f.broker.MessageCount("placed"), should.Equal, 1)
	f.So(f.broker.MessageCount("any"), should.Equal, 0)
}

func (f *TopologyFixture) TestFanoutExchangeIgnoresTheKeyAndDeliversOncePerQueue() {
	f.So(f.broker.DeclareExchange("events", KindFanout, true), should.BeNil)
	f.queue("a")
	f.queue("b")
	f.So(f.broker.Bind("a", "events", ""), should.BeNil)
	f.So(f.broker.Bind("a", "events", "other"), should.BeNil)
	f.So(f.broker.Bind("b", "events", "x"), should.BeNil)

	f.So(f.broker.Publish(f.ctx, ctxDispatch("events", "whatever")), should.BeNil)

	f.So(f.broker.MessageCount("a"), should.Equal, 1)
	f.So(f.broker.MessageCount("b"), should.Equal, 1)
}

func (f *TopologyFixture) TestDefaultExchangeRoutesToTheQueueNamedByTheKey() {
	f.queue("orders")
	f.So(f.broker.Publish(f.ctx, ctxDispatch("", "orders")), should.BeNil)
	f.So(f.broker.MessageCount("orders"), should.Equal, 1)
	f.So(f.code(f.broker.Bind("orders", "", "orders")), should.Equal, messaging.ReplyAccessRefused)
}

func (f *TopologyFixture) TestRedeclaringAnExchangeDifferentlyFails() {
	f.So(f.broker.DeclareExchange("events", KindFanout, true), should.BeNil)
	f.So(f.broker.DeclareExchange("events", KindFanout, true), should.BeNil)

	err := f.broker.DeclareExchange("events", KindTopic, true)
	f.So(err, should.Wrap, messaging.ErrPreconditionFailed)
	f.So(f.code(err), should.Equal, messaging.ReplyPreconditionFailed)
	f.So(f.broker.DeclareExchange("events", KindFanout, false), should.Wrap, messaging.ErrPreconditionFailed)
}

func (f *TopologyFixture) TestUnknownKindAndReservedNamesAreRefused() {
	f.So(f.broker.DeclareExchange("h", "x-consistent-hash", true), should.NotBeNil)
	f.So(f.code(f.broker.DeclareExchange("amq.mine", KindDirect, true)), should.Equal, messaging.ReplyAccessRefused)
	f.So(f.broker.DeclareExchange("amq.topic", KindTopic, true), should.BeNil)
	f.So(f.code(f.broker.DeclareQueue("amq.q", QueueOptions{})), should.Equal, messaging.ReplyAccessRefused)
	f.So(f.code(f.broker.DeclareExchange("", KindDirect, true)), should.Equal, messaging.ReplyAccessRefused)
	f.So(f.code(f.broker.DeleteExchange("amq.direct")), should.Equal, messaging.ReplyAccessRefused)
}

func (f *TopologyFixture) TestRedeclaringAQueueDifferentlyFails() {
	declared := QueueOptions{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum", "x-message-ttl": int32(1000)}}
	f.So(f.broker.DeclareQueue("q", declared), should.BeNil)

	for _, different := range []QueueOptions{
		{Durable: false, Arguments: declared.Arguments},
		{Durable: true, Exclusive: true, Arguments: declared.Arguments},
		{Durable: true, AutoDelete: true, Arguments: declared.Arguments},
		{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum"}},
		{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum", "x-message-ttl": 2000}},
		{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum", "x-message-ttl": 1000, "x-max-length": 5}},
		{Durable: true},
	} {
		err := f.broker.DeclareQueue("q", different)
		f.So(err, should.Wrap, messaging.ErrPreconditionFailed)
		f.So(f.code(err), should.Equal, messaging.ReplyPreconditionFailed)
	}
}

func (f *TopologyFixture) TestRedeclaringAQueueEquivalentlySucceeds() {
	f.So(f.broker.DeclareQueue("q", QueueOptions{Durable: true, Arguments: map[string]any{"x-message-ttl": int32(1000)}}), should.BeNil)
	f.So(f.broker.DeclareQueue("q", QueueOptions{Durable: true, Arguments: map[string]any{"x-message-ttl": int64(1000)}}), should.BeNil)
	f.So(f.broker.DeclareQueue("q", QueueOptions{Durable: true, Arguments: map[string]any{"x-message-ttl": 1000, "x-queue-type": "classic"}}), should.BeNil)
}

func (f *TopologyFixture) TestAQuorumQueueMustBeDurableSharedAndKept() {
	quorum := map[string]any{"x-queue-type": "quorum"}
	f.So(f.broker.DeclareQueue("a", QueueOptions{Arguments: quorum}), should.Wrap, messaging.ErrPreconditionFailed)
	f.So(f.broker.DeclareQueue("b", QueueOptions{Durable: true, Exclusive: true, Arguments: quorum}), should.Wrap, messaging.ErrPreconditionFailed)
	f.So(f.broker.DeclareQueue("c", QueueOptions{Durable: true, AutoDelete: true, Arguments: quorum}), should.Wrap, messaging.ErrPreconditionFailed)
	f.So(f.broker.DeclareQueue("d", QueueOptions{Durable: true, Arguments: map[string]any{"x-message-ttl": "soon"}}), should.Wrap, messaging.ErrPreconditionFailed)
}

func (f *TopologyFixture) TestBindingWhatWasNeverDeclaredFailsNotFound() {
	f.queue("q")
	f.So(f.broker.DeclareExchange("x", KindDirect, true), should.BeNil)
	f.So(f.code(f.broker.Bind("q", "missing", "k")), should.Equal, messaging.ReplyNotFound)
	f.So(f.code(f.broker.Bind("missing", "x", "k")), should.Equal, messaging.ReplyNotFound)
	f.So(f.broker.Bind("q", "x", "k"), should.BeNil)
}

func (f *TopologyFixture) TestMandatoryUnroutablePublishFailsNamingExchangeKeyAndNoRoute() {
	f.So(f.broker.DeclareExchange("events", KindTopic, true), should.BeNil)
	err := f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", RoutingKey: "order.placed", MessageID: "m-1", Mandatory: true})
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(err, errorContains, `message m-1 to exchange "events" with key "order.placed" reached no queue (312 NO_ROUTE)`)
	f.So(f.monitor.Calls(), should.Equal, []string{`published "events" "order.placed" 0`})
}

func (f *TopologyFixture) TestNonMandatoryUnroutablePublishIsDroppedSilently() {
	f.So(f.broker.DeclareExchange("events", KindTopic, true), should.BeNil)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("events", "order.placed")), should.BeNil)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("", "no-such-queue")), should.BeNil)
}

func (f *TopologyFixture) TestPublishingToAnUndeclaredExchangeFailsNotFound() {
	err := f.broker.Publish(f.ctx, ctxDispatch("missing", "k"))
	f.So(f.code(err), should.Equal, messaging.ReplyNotFound)
	f.So(err, should.Wrap, messaging.ErrNotFound)
}

func (f *TopologyFixture) TestDeletingAQueueRemovesItsBindingsAndMessages() {
	f.So(f.broker.DeclareExchange("events", KindFanout, true), should.BeNil)
	f.queue("q")
	f.So(f.broker.Bind("q", "events", ""), should.BeNil)
	f.publish("q", "1")
	f.So(f.broker.DeleteQueue("q"), should.BeNil)
	f.So(f.broker.DeleteQueue("q"), should.BeNil)

	f.queue("q")
	f.So(f.broker.MessageCount("q"), should.Equal, 0)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Mandatory: true}), should.Wrap, messaging.ErrUnroutable)

	f.So(f.broker.DeleteExchange("events"), should.BeNil)
	f.So(f.code(f.broker.Bind("q", "events", "")), should.Equal, messaging.ReplyNotFound)
}

func (f *TopologyFixture) TestPullTakesFromTheFrontAndCountsOnlyReadyMessages() {
	f.queue("q")
	f.publish("q", "1", "2")
	f.So(f.broker.MessageCount("q"), should.Equal, 2)

	first, ok := f.broker.Pull("q")
	f.So(ok, should.BeTrue)
	f.So(string(first.Payload), should.Equal, "1")
	f.So(first.SourceQueue, should.Equal, "q")
	second, _ := f.broker.Pull("q")
	f.So(second.DeliveryID, should.BeGreaterThan, first.DeliveryID)
	_, ok = f.broker.Pull("q")
	f.So(ok, should.BeFalse)
	_, ok = f.broker.Pull("missing")
	f.So(ok, should.BeFalse)
	f.So(f.broker.MessageCount("missing"), should.Equal, 0)
}

func (f *TopologyFixture) TestPerMessageTTLExpiresAtTheHead() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.queue("q")
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{RoutingKey: "q", Payload: []byte("short"), Expiration: 10 * time.Second}), should.BeNil)
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{RoutingKey: "q", Payload: []byte("forever")}), should.BeNil)

		pass(10*time.Second - time.Millisecond)
		f.So(f.broker.MessageCount("q"), should.Equal, 2)
		pass(time.Millisecond)
		f.So(f.broker.MessageCount("q"), should.Equal, 1)
		d, _ := f.broker.Pull("q")
		f.So(string(d.Payload), should.Equal, "forever")
		f.So(f.monitor.Calls(), should.Contain, "expired q")
	})
}

func (f *TopologyFixture) TestAMessageBehindTheHeadDoesNotExpireUntilItReachesIt() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.queue("q")
		f.publish("q", "head")
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{RoutingKey: "q", Payload: []byte("short"), Expiration: time.Second}), should.BeNil)
		pass(2 * time.Second)
		f.So(f.broker.MessageCount("q"), should.Equal, 2)
		f.broker.Pull("q")
		f.So(f.broker.MessageCount("q"), should.Equal, 0)
	})
}

func (f *TopologyFixture) TestQueueTTLDeadLettersThroughTheExchangeItNames() {
	inBubble(f.T(), f, f.Setup, f.Teardown, f.queueTTLDeadLetters)
}

func (f *TopologyFixture) queueTTLDeadLetters() {
	f.So(f.broker.DeclareExchange("acemq.retry", KindDirect, true), should.BeNil)
	f.queue("orders")
	f.So(f.broker.Bind("orders", "acemq.retry", "orders"), should.BeNil)
	f.So(f.broker.DeclareQueue("orders.retry.30s", QueueOptions{Durable: true, Arguments: map[string]any{
		"x-message-ttl":             int64(30_000),
		"x-dead-letter-exchange":    "acemq.retry",
		"x-dead-letter-routing-key": "orders",
	}}), should.BeNil)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{RoutingKey: "orders.retry.30s", MessageID: "m-1", Attempt: 2, Expiration: 60_000_000_000}), should.BeNil)

	pass(30*time.Second - time.Millisecond)
	f.So(f.broker.MessageCount("orders"), should.Equal, 0)
	pass(time.Millisecond)
	f.So(f.broker.MessageCount("orders.retry.30s"), should.Equal, 0)
	d, ok := f.broker.Pull("orders")
	f.So(ok, should.BeTrue)
	f.So(d.MessageID, should.Equal, "m-1")
	f.So(d.Attempt, should.Equal, 2)
	f.So(d.Topic, should.Equal, "acemq.retry")
	f.So(d.RoutingKey, should.Equal, "orders")
	f.So(d.Expiration, should.Equal, 0)
}

func (f *TopologyFixture) TestAnExclusiveQueueBelongsToItsConnection() {
	owner := f.connect()
	_, err := f.stream(owner, messaging.StreamConfig{StreamName: "mine", EstablishTopology: true, ExclusiveStream: true})
	f.So(err, should.BeNil)

	other := f.connect()
	_, err = f.stream(other, messaging.StreamConfig{StreamName: "mine", EstablishTopology: true, ExclusiveStream: true})
	f.So(err, should.Wrap, messaging.ErrResourceLocked)
	_, err = f.stream(other, messaging.StreamConfig{StreamName: "mine"})
	f.So(err, should.Wrap, messaging.ErrResourceLocked)

	f.publish("mine", "1")
	f.So(owner.Close(), should.BeNil)
	f.So(f.broker.MessageCount("mine"), should.Equal, 0)
	f.So(f.broker.DeclareQueue("mine", QueueOptions{}), should.BeNil) // gone, so declarable anew
}

func (f *TopologyFixture) TestAnAutoDeleteQueueGoesWithItsLastConsumer() {
	f.So(f.broker.DeclareQueue("temp", QueueOptions{AutoDelete: true}), should.BeNil)
	conn := f.connect()
	first, err := f.stream(conn, messaging.StreamConfig{StreamName: "temp"})
	f.So(err, should.BeNil)
	second, err := f.stream(conn, messaging.StreamConfig{StreamName: "temp"})
	f.So(err, should.BeNil)

	f.So(first.Close(), should.BeNil)
	f.So(f.broker.DeclareQueue("temp", QueueOptions{AutoDelete: true}), should.BeNil)
	f.So(second.Close(), should.BeNil)
	f.So(f.broker.DeclareQueue("temp", QueueOptions{Durable: true}), should.BeNil) // a new queue
}
