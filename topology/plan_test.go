package topology

import (
	"context"
	"errors"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

func TestPlanFixture(t *testing.T) {
	gunit.Run(new(PlanFixture), t)
}

type PlanFixture struct {
	*gunit.Fixture
	ctx      context.Context
	broker   *memory.Broker
	declarer messaging.Declarer
}

func (f *PlanFixture) Setup() {
	f.ctx = context.Background()
	f.broker = memory.New()
	conn, err := f.broker.Connect(f.ctx)
	f.So(err, should.BeNil)
	var ok bool
	f.declarer, ok = messaging.As[messaging.Declarer](conn)
	f.So(ok, should.BeTrue)
}

func (f *PlanFixture) Teardown() { _ = f.broker.Close() }

// acemq is the config of a default subscription on another AceMQ library's
// topology: quorum orders.new, bound to the topic exchange orders on order.*.
func acemq() messaging.StreamConfig {
	return messaging.StreamConfig{
		StreamName: "orders.new", EstablishTopology: true, DeadLetters: true, Replication: true,
		Bindings: []messaging.StreamBinding{{Exchange: "orders", Kind: messaging.ExchangeTopic, Key: "order.*"}},
	}
}

func (f *PlanFixture) TestAStreamsPlanInWords() {
	plan, err := ForStream(acemq())
	f.So(err, should.BeNil)
	f.So(plan.String(), should.Equal, ""+
		"declare exchange orders (topic, durable)\n"+
		"declare exchange acemq.dlx (direct, durable)\n"+
		"declare queue orders.new (quorum, durable, x-dead-letter-exchange=acemq.dlx, x-dead-letter-routing-key=orders.new.dlq)\n"+
		"declare queue orders.new.dlq (classic, durable)\n"+
		"declare queue orders.new.parked (classic, durable)\n"+
		"bind orders -> orders.new (order.*)\n"+
		"bind acemq.dlx -> orders.new.dlq (orders.new.dlq)\n"+
		"bind acemq.dlx -> orders.new.parked (orders.new.parked)\n")
}

func (f *PlanFixture) TestValidateNamesEveryMistake() {
	plan := Plan{
		Exchanges: []messaging.Exchange{{Name: "nokind"}, {Name: "x", Kind: messaging.ExchangeDirect}, {Name: "x", Kind: messaging.ExchangeTopic}},
		Queues:    []messaging.Queue{{Name: "q", Type: messaging.QueueQuorum, Arguments: map[string]any{"x-queue-type": "stream"}}},
		Bindings: []messaging.Binding{
			{Exchange: "x", Queue: "a-queue-nobody-declared", Key: "order.placed"},
			{Exchange: "", Queue: "q"},
			{Exchange: "undeclared", Queue: "q"},
		},
	}
	err := plan.Validate()
	f.So(err, should.NotBeNil)
	for _, want := range []string{
		`exchange "nokind" has no kind`,
		`exchange "x" is declared twice, differently`,
		"state the type once",
		`binding x -> a-queue-nobody-declared (order.placed) names queue "a-queue-nobody-declared", which this plan does not declare`,
		"the default exchange cannot be bound to",
		`names exchange "undeclared", which this plan does not declare`,
	} {
		f.So(err.Error(), should.ContainSubstring, want)
	}
	f.So(plan.Apply(f.ctx, f.declarer), should.NotBeNil)
	_, err = f.declarer.InspectQueue(f.ctx, "q")
	f.So(err, should.Wrap, messaging.ErrNotFound) // nothing was applied
}

func (f *PlanFixture) TestMergingTwoStreamsDeclaresTheSharedExchangeOnce() {
	first, _ := ForStream(messaging.StreamConfig{StreamName: "a", Topics: []string{"events"}, EstablishTopology: true, DeadLetters: true})
	second, _ := ForStream(messaging.StreamConfig{StreamName: "b", Topics: []string{"events"}, EstablishTopology: true, DeadLetters: true})
	merged := first.Merge(second)
	f.So(merged.Exchanges, should.HaveLength, 2) // events, acemq.dlx
	f.So(merged.Queues, should.HaveLength, 6)
	f.So(merged.Validate(), should.BeNil)
}

func (f *PlanFixture) TestACheckOfAnEmptyBrokerFindsEverythingMissingAndCreatesNothing() {
	plan, _ := ForStream(acemq())
	report, err := plan.Check(f.ctx, f.declarer)
	f.So(err, should.BeNil)
	f.So(report.Healthy(), should.BeFalse)
	for _, finding := range report {
		f.So(finding.State, should.Equal, Missing)
	}
	_, err = f.declarer.InspectQueue(f.ctx, "orders.new")
	f.So(err, should.Wrap, messaging.ErrNotFound)
	f.So(f.declarer.InspectExchange(f.ctx, "orders"), should.Wrap, messaging.ErrNotFound)
}

func (f *PlanFixture) TestAnAppliedPlanChecksHealthyWithBindingsUnknown() {
	plan, _ := ForStream(acemq())
	f.So(plan.Apply(f.ctx, f.declarer), should.BeNil)
	f.So(plan.Apply(f.ctx, f.declarer), should.BeNil) // applying twice changes nothing

	report, err := plan.Check(f.ctx, f.declarer)
	f.So(err, should.BeNil)
	f.So(report.Healthy(), should.BeTrue)
	f.So(report[0], should.Resemble, Finding{What: "exchange", Name: "orders", State: Present})
	f.So(report[len(report)-1].State, should.Equal, Unknown)
}

func (f *PlanFixture) TestACheckNamesADifferenceInTheBrokersWords() {
	f.So(f.declarer.DeclareExchange(f.ctx, messaging.Exchange{Name: "orders", Kind: messaging.ExchangeFanout, Durable: true}), should.BeNil)
	f.So(f.declarer.DeclareQueue(f.ctx, messaging.Queue{Name: "orders.new", Durable: true}), should.BeNil)
	plan, _ := ForStream(acemq())

	report, err := plan.Check(f.ctx, f.declarer)

	f.So(err, should.BeNil)
	f.So(report.Healthy(), should.BeFalse)
	f.So(report[0].State, should.Equal, Differs)
	f.So(report[0].Detail, should.ContainSubstring, "inequivalent arg 'type'")
	f.So(report[2].Name, should.Equal, "orders.new")
	f.So(report[2].State, should.Equal, Differs)
	f.So(report.String(), should.ContainSubstring, "differs  queue    orders.new: PRECONDITION_FAILED")
}

func (f *PlanFixture) TestACheckThatCannotAskTheBrokerFails() {
	plan, _ := ForStream(acemq())
	_, err := plan.Check(f.ctx, failing{})
	f.So(err, should.NotBeNil)
	f.So(errors.Is(err, errLost), should.BeTrue)
}

var errLost = errors.New("connection lost")

type failing struct{ messaging.Declarer }

func (failing) InspectExchange(context.Context, string) error { return errLost }

func (f *PlanFixture) TestAStreamQueueIsPlannedAndDeclaredDurable() {
	plan := Plan{Queues: []messaging.Queue{{Name: "orders.log", Type: messaging.QueueStream, Arguments: map[string]any{"x-max-age": "7D"}}}}
	f.So(plan.Validate(), should.BeNil)
	f.So(plan.String(), should.Equal, "declare queue orders.log (stream, durable, x-max-age=7D)\n")
	f.So(plan.Apply(f.ctx, f.declarer), should.BeNil)
	f.So(f.declarer.DeclareQueue(f.ctx, messaging.Queue{Name: "orders.log", Type: messaging.QueueStream, Durable: true, Arguments: map[string]any{"x-max-age": "7D"}}), should.BeNil)
	merged := plan.Merge(Plan{Queues: []messaging.Queue{{Name: "orders.log", Type: messaging.QueueStream, Durable: true, Arguments: map[string]any{"x-max-age": "7D"}}}})
	f.So(merged.Queues, should.HaveLength, 1) // declared alike
}

func (f *PlanFixture) TestAStreamsPlanDeclaresAStreamQueueAsTheBrokerAcceptsIt() {
	plan, err := ForStream(messaging.StreamConfig{
		StreamName: "orders.log", EstablishTopology: true, DeadLetters: true,
		QueueType: messaging.QueueStream, TransientStream: true, ExclusiveStream: true, AutoDeleteStream: true,
	})
	f.So(err, should.BeNil)
	f.So(plan.Validate(), should.BeNil)
	f.So(plan.Queues[0], should.Resemble, messaging.Queue{Name: "orders.log", Type: messaging.QueueStream, Durable: true,
		Arguments: map[string]any{messaging.QueueTypeArgument: "stream"}})
}

func (f *PlanFixture) TestValidateNamesAStreamSaidToBeExclusiveOrAutoDelete() {
	plan := Plan{Queues: []messaging.Queue{{Name: "orders.log", Type: messaging.QueueStream, Durable: true, Exclusive: true, AutoDelete: true}}}
	err := plan.Validate()
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, `queue "orders.log" is a stream, and also exclusive and auto-delete`)
	f.So(plan.Apply(f.ctx, f.declarer), should.NotBeNil)
}
