package messaging

import (
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestTopologyFixture(t *testing.T) {
	gunit.Run(new(TopologyFixture), t)
}

type TopologyFixture struct {
	*gunit.Fixture
}

type plainConnection struct{ Connection }

type declaringConnection struct {
	Connection
	Declarer
}

type decorator struct{ Connection }

func (d decorator) Unwrap() Connection { return d.Connection }

type loop struct{ Connection }

func (l *loop) Unwrap() Connection { return l }

func (f *TopologyFixture) TestAsFindsACapabilityThroughDecorators() {
	inner := declaringConnection{}
	found, ok := As[Declarer](decorator{decorator{inner}})
	f.So(ok, should.BeTrue)
	f.So(found, should.Equal, inner)
}

func (f *TopologyFixture) TestAsReportsFalseWhenNothingBeneathOffersIt() {
	_, ok := As[Declarer](decorator{plainConnection{}})
	f.So(ok, should.BeFalse)
	_, ok = As[Declarer](nil)
	f.So(ok, should.BeFalse)
	_, ok = As[Declarer](decorator{nil})
	f.So(ok, should.BeFalse)
	_, ok = As[Declarer](&loop{}) // a cycle ends
	f.So(ok, should.BeFalse)
}

func (f *TopologyFixture) TestClassicIsDeclaredWithoutAQueueTypeArgument() {
	args, err := QueueArguments(Queue{Name: "q", Type: QueueClassic, Arguments: map[string]any{QueueTypeArgument: "classic", "x-message-ttl": 5}})
	f.So(err, should.BeNil)
	f.So(args, should.Resemble, map[string]any{"x-message-ttl": 5})
	args, err = QueueArguments(Queue{Name: "q"})
	f.So(err, should.BeNil)
	f.So(args, should.BeEmpty)
}

func (f *TopologyFixture) TestQuorumAndStreamAddTheirArgument() {
	for _, kind := range []QueueType{QueueQuorum, QueueStream} {
		given := map[string]any{"x-max-length": 10}
		args, err := QueueArguments(Queue{Name: "q", Type: kind, Arguments: given})
		f.So(err, should.BeNil)
		f.So(args, should.Resemble, map[string]any{"x-max-length": 10, QueueTypeArgument: string(kind)})
		f.So(given, should.HaveLength, 1) // the caller's map is not changed
	}
	args, err := QueueArguments(Queue{Name: "q", Arguments: map[string]any{QueueTypeArgument: "quorum"}})
	f.So(err, should.BeNil)
	f.So(args[QueueTypeArgument], should.Equal, "quorum")
}

func (f *TopologyFixture) TestATypeStatedTwiceDifferentlyOrUnknownIsRefused() {
	_, err := QueueArguments(Queue{Name: "q", Type: QueueQuorum, Arguments: map[string]any{QueueTypeArgument: "stream"}})
	f.So(err, should.NotBeNil)
	_, err = QueueArguments(Queue{Name: "q", Type: QueueClassic, Arguments: map[string]any{QueueTypeArgument: "quorum"}})
	f.So(err, should.NotBeNil)
	_, err = QueueArguments(Queue{Name: "q", Type: "lazy"})
	f.So(err, should.NotBeNil)
}

func (f *TopologyFixture) TestAStreamQueueIsDeclaredDurableSharedAndKept() {
	for _, q := range []Queue{
		{Name: "log", Type: QueueStream, Exclusive: true, AutoDelete: true},
		{Name: "log", Arguments: map[string]any{QueueTypeArgument: "stream"}, Exclusive: true},
	} {
		declared, err := DeclaredQueue(q)
		f.So(err, should.BeNil)
		f.So(declared.Durable, should.BeTrue)
		f.So(declared.Exclusive, should.BeFalse)
		f.So(declared.AutoDelete, should.BeFalse)
		f.So(declared.Arguments[QueueTypeArgument], should.Equal, "stream")
	}
}

func (f *TopologyFixture) TestOtherQueuesAreDeclaredAsGiven() {
	given := map[string]any{"x-max-length": 10}
	for _, q := range []Queue{
		{Name: "scratch", Exclusive: true, AutoDelete: true, Arguments: given},
		{Name: "q", Type: QueueQuorum, Durable: true, Arguments: given},
	} {
		declared, err := DeclaredQueue(q)
		f.So(err, should.BeNil)
		arguments, _ := QueueArguments(q)
		q.Arguments = arguments
		f.So(declared, should.Resemble, q)
	}
	f.So(given, should.HaveLength, 1)
	_, err := DeclaredQueue(Queue{Name: "q", Type: QueueStream, Arguments: map[string]any{QueueTypeArgument: "quorum"}})
	f.So(err, should.NotBeNil)
}

func (f *TopologyFixture) TestAnExchangeNeedsAKnownKindAndAName() {
	f.So(Exchange{Name: "x", Kind: ExchangeHeaders}.Validate(), should.BeNil)
	f.So(Exchange{Name: "x"}.Validate(), should.NotBeNil)
	f.So(Exchange{Name: "x", Kind: "x-delayed-message"}.Validate(), should.NotBeNil)
	f.So(Exchange{Kind: ExchangeDirect}.Validate(), should.NotBeNil)
}

func (f *TopologyFixture) TestASourceQueueFollowsTheStreamConfig() {
	q, err := StreamConfig{StreamName: "orders.new", DeadLetters: true, Replication: true}.SourceQueue()
	f.So(err, should.BeNil)
	f.So(q, should.Resemble, Queue{Name: "orders.new", Type: QueueQuorum, Durable: true, Arguments: map[string]any{
		"x-dead-letter-exchange": "acemq.dlx", "x-dead-letter-routing-key": "orders.new.dlq",
	}})

	q, err = StreamConfig{StreamName: "scratch", TransientStream: true, AutoDeleteStream: true, ExclusiveStream: true}.SourceQueue()
	f.So(err, should.BeNil)
	f.So(q, should.Resemble, Queue{Name: "scratch", Exclusive: true, AutoDelete: true})

	_, err = StreamConfig{StreamName: "q", Replication: true, QueueType: QueueStream}.SourceQueue()
	f.So(err, should.NotBeNil)
}

func (f *TopologyFixture) TestAStreamSourceQueueCarriesNoDeadLetterArguments() {
	for _, config := range []StreamConfig{
		{StreamName: "log", DeadLetters: true, QueueType: QueueStream},
		{StreamName: "log", DeadLetters: true, QueueArguments: map[string]any{QueueTypeArgument: "stream"}},
	} {
		q, err := config.SourceQueue()
		f.So(err, should.BeNil)
		f.So(q.Arguments["x-dead-letter-exchange"], should.BeNil)
	}
}

func (f *TopologyFixture) TestTopicsAreFanoutBindingsBeforeTheBindings() {
	bindings := StreamConfig{Topics: []string{"a"}, Bindings: []StreamBinding{{Exchange: "b", Kind: ExchangeDirect, Key: "k"}, {Exchange: "c", Kind: ExchangeTopic, Key: "x.*"}}}.StreamBindings()
	f.So(bindings, should.Resemble, []StreamBinding{
		{Exchange: "a", Kind: ExchangeFanout}, {Exchange: "b", Kind: ExchangeDirect, Key: "k"}, {Exchange: "c", Kind: ExchangeTopic, Key: "x.*"},
	})
}

func (f *TopologyFixture) TestABindingWithAKeyAndNoKindIsATopic() {
	config := StreamConfig{Bindings: []StreamBinding{{Exchange: "orders", Key: "order.*"}, {Exchange: "audit"}}}
	f.So(config.StreamBindings(), should.Resemble, []StreamBinding{
		{Exchange: "orders", Kind: ExchangeTopic, Key: "order.*"}, {Exchange: "audit", Kind: ExchangeFanout},
	})
	f.So(config.Bindings[0].Kind, should.BeEmpty) // the config is not changed
}

func (f *TopologyFixture) TestAnExchangeHasOneKindForAllItsBindings() {
	bindings := StreamConfig{Topics: []string{"orders", "refunds"}, Bindings: []StreamBinding{
		{Exchange: "orders", Key: "order.*"},
		{Exchange: "refunds", Kind: ExchangeDirect, Key: "refund"},
		{Exchange: "refunds", Key: "chargeback"},
	}}.StreamBindings()
	f.So(bindings, should.Resemble, []StreamBinding{
		{Exchange: "orders", Kind: ExchangeTopic, Key: "#"}, // a topic still receives everything of its exchange
		{Exchange: "refunds", Kind: ExchangeDirect},
		{Exchange: "orders", Kind: ExchangeTopic, Key: "order.*"},
		{Exchange: "refunds", Kind: ExchangeDirect, Key: "refund"},
		{Exchange: "refunds", Kind: ExchangeDirect, Key: "chargeback"},
	})
}
