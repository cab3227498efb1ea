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

func (f *TopologyFixture) TestAnExchangeNeedsAKnownKindAndAName() {
	f.So(Exchange{Name: "x", Kind: ExchangeHeaders}.Validate(), should.BeNil)
	f.So(Exchange{Name: "x"}.Validate(), should.NotBeNil)
	f.So(Exchange{Name: "x", Kind: "x-delayed-message"}.Validate(), should.NotBeNil)
	f.So(Exchange{Kind: ExchangeDirect}.Validate(), should.NotBeNil)
}
