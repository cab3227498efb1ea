package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestSlipFixture(t *testing.T) {
	gunit.Run(new(SlipFixture), t)
}

type SlipFixture struct {
	*gunit.Fixture
}

func (f *SlipFixture) TestTheJSONFormIsTheWireContractsAndOmitsWhatIsEmpty() {
	slip := NewRoutingSlip().Then("orders-events", "order.validate", "validate").Then("orders-events", "order.charge", "")
	slip = slip.Advance(time.Date(2026, 2, 3, 4, 5, 6, 0, time.FixedZone("CET", 3600)))
	encoded, err := json.Marshal(slip)
	f.So(err, should.BeNil)
	f.So(string(encoded), should.Equal, `{"steps":[{"exchange":"orders-events","routingKey":"order.charge"}],"done":[{"exchange":"orders-events","routingKey":"order.validate","name":"validate","completedAt":"2026-02-03T03:05:06Z"}]}`)
	fresh, _ := json.Marshal(NewRoutingSlip().Then("x", "k", "n"))
	f.So(string(fresh), should.Equal, `{"steps":[{"exchange":"x","routingKey":"k","name":"n"}]}`)
}

// The family writes completedAt in whole seconds, RFC 3339 in UTC:
// "2026-01-01T10:11:12Z", however precise the moment the step finished.
func (f *SlipFixture) TestCompletedAtIsWrittenInWholeSecondsAsTheFamilyWritesIt() {
	slip := NewRoutingSlip().Then("orders-events", "order.validate", "validate").Then("orders-events", "order.charge", "charge")
	slip = slip.Advance(time.Date(2026, 1, 1, 10, 11, 12, 345_678_901, time.UTC))
	encoded, err := json.Marshal(slip)
	f.So(err, should.BeNil)
	f.So(string(encoded), should.Equal, `{"steps":[{"exchange":"orders-events","routingKey":"order.charge","name":"charge"}],"done":[{"exchange":"orders-events","routingKey":"order.validate","name":"validate","completedAt":"2026-01-01T10:11:12Z"}]}`)
	read, err := ParseSlip(encoded)
	f.So(err, should.BeNil)
	f.So(read.Done()[0].CompletedAt, should.Equal, time.Date(2026, 1, 1, 10, 11, 12, 0, time.UTC))
}

// Advance returns the advanced slip and leaves the one it is given as it
// was, as the family's slips do: a handler run again holds the slip it read.
func (f *SlipFixture) TestAdvanceReturnsANewSlipAndLeavesItsOwnAsItWas() {
	slip := NewRoutingSlip().Then("a", "ka", "first").Then("b", "kb", "second")
	advanced := slip.Advance(time.Date(2026, 1, 1, 10, 11, 12, 0, time.UTC))
	f.So(slip.Done(), should.BeEmpty)
	f.So(slip.Remaining(), should.HaveLength, 2)
	f.So(advanced.Done(), should.Resemble, []Stop{{Exchange: "a", RoutingKey: "ka", Name: "first", CompletedAt: time.Date(2026, 1, 1, 10, 11, 12, 0, time.UTC)}})
	f.So(advanced.Remaining(), should.Resemble, []Stop{{Exchange: "b", RoutingKey: "kb", Name: "second"}})
	again := advanced.Advance(time.Now())
	f.So(advanced.Remaining(), should.HaveLength, 1)
	f.So(again.Remaining(), should.BeEmpty)
	f.So(again.Done(), should.HaveLength, 2)
}

// Whatever makes a slip unreadable, the error says "cannot read the routing
// slip", as every library of the family words it.
func (f *SlipFixture) TestAnUnreadableSlipSaysItCannotReadTheRoutingSlip() {
	for _, text := range []string{`nul`, `{"steps":3}`, `{"done":[{"completedAt":"yesterday"}]}`} {
		_, err := ParseSlip([]byte(text))
		f.So(err.Error(), should.ContainSubstring, "cannot read the routing slip")
	}
	_, _, err := ReadSlip(messaging.Delivery{Headers: map[string]any{HeaderRoutingSlip: int64(3)}})
	f.So(err.Error(), should.ContainSubstring, "cannot read the routing slip")
}

func (f *SlipFixture) TestTheJSONFormReadsBack() {
	slip, err := ParseSlip([]byte(`{"steps":[{"exchange":"orders-events","routingKey":"order.charge","name":"charge"}],
		"done":[{"exchange":"orders-events","routingKey":"order.validate","name":"validate","completedAt":"2026-02-03T04:05:06Z"}]}`))
	f.So(err, should.BeNil)
	f.So(slip.Form(), should.Equal, FormJSON)
	f.So(slip.RunID(), should.BeEmpty)
	next, ok := slip.Next()
	f.So(ok, should.BeTrue)
	f.So(next, should.Equal, Stop{Exchange: "orders-events", RoutingKey: "order.charge", Name: "charge"})
	f.So(slip.Done()[0].CompletedAt, should.Equal, time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
}

func (f *SlipFixture) TestWhatIsNotTheSlipsJSONIsRefused() {
	for _, text := range []string{``, `[]`, `{"steps":3}`, `{"done":[{"completedAt":"yesterday"}]}`, `nul`} {
		_, err := ParseSlip([]byte(text))
		f.So(errors.Is(err, ErrUnreadableSlip), should.BeTrue)
	}
	_, found, err := ReadSlip(messaging.Delivery{Headers: map[string]any{HeaderRoutingSlip: int64(3)}})
	f.So(found, should.BeTrue)
	f.So(errors.Is(err, ErrUnreadableSlip), should.BeTrue)
}

func (f *SlipFixture) TestTheJSONHeaderIsReadBeforeTheRouteHeaders() {
	d := messaging.Delivery{
		Headers: map[string]any{HeaderRoutingSlip: []byte(`{"steps":[{"exchange":"a","routingKey":"b"}]}`)},
		Route:   []string{"validate", "charge"}, RoutePosition: 1,
	}
	slip, found, err := ReadSlip(d)
	f.So(err, should.BeNil)
	f.So(found, should.BeTrue)
	f.So(slip.Form(), should.Equal, FormJSON)
}

func (f *SlipFixture) TestTheDeclaredRouteIsReadAtItsPosition() {
	d := messaging.Delivery{Route: []string{"validate", "charge", "ship"}, RoutePosition: 1, RouteID: "run-1"}
	slip, found, err := ReadSlip(d)
	f.So(err, should.BeNil)
	f.So(found, should.BeTrue)
	f.So(slip.Form(), should.Equal, FormSteps)
	f.So(slip.RunID(), should.Equal, "run-1")
	f.So(slip.String(), should.Equal, "steps: validate,[charge],ship")
	slip.AsSteps(NewRoute("orders", "validate", "charge", "ship"))
	next, _ := slip.Next()
	f.So(next, should.Equal, Stop{Exchange: "orders", RoutingKey: "charge", Name: "charge"})
	f.So(slip.RunID(), should.Equal, "run-1")

	past, _, _ := ReadSlip(messaging.Delivery{Route: []string{"a"}, RoutePosition: 5})
	_, ok := past.Next()
	f.So(ok, should.BeFalse) // a position past the end: finished
	_, found, _ = ReadSlip(messaging.Delivery{})
	f.So(found, should.BeFalse)
}

func (f *SlipFixture) TestTheStepsFormWritesEveryNameAndThePositionDone() {
	route := NewRoute("orders", "validate", "charge", "ship")
	f.So(route.QueueFor("charge"), should.Equal, "orders.charge")
	slip := route.Start()
	f.So(slip.RunID(), should.HaveLength, 36)
	slip = slip.Advance(time.Now())
	d := messaging.Dispatch{Headers: map[string]any{"x-tenant": "t1"}}
	f.So(slip.Apply(&d), should.BeNil)
	f.So(d.Topic, should.Equal, "orders")
	f.So(d.RoutingKey, should.Equal, "charge")
	f.So(d.Route, should.Equal, []string{"validate", "charge", "ship"})
	f.So(d.RoutePosition, should.Equal, 1)
	f.So(d.RouteID, should.Equal, slip.RunID())
	f.So(d.Headers, should.Equal, map[string]any{"x-tenant": "t1"})

	slip.AsJSON()
	f.So(slip.Apply(&d), should.BeNil)
	f.So(d.Route, should.BeNil)
	f.So(d.Headers[HeaderRoutingSlip], should.Equal, `{"steps":[{"exchange":"orders","routingKey":"charge","name":"charge"},{"exchange":"orders","routingKey":"ship","name":"ship"}],"done":[{"exchange":"orders","routingKey":"validate","name":"validate","completedAt":"`+slip.Done()[0].CompletedAt.Format(time.RFC3339Nano)+`"}]}`)
}

func (f *SlipFixture) TestAnUnnamedStopCannotTravelAsADeclaredRoute() {
	slip := NewRoutingSlip().Then("x", "k", "")
	slip.form = FormSteps
	f.So(slip.Apply(&messaging.Dispatch{}), should.NotBeNil)
}

func (f *SlipFixture) TestStartRefusesAnEmptySlipAndPublishesMandatory() {
	w := &fakeWriter{}
	f.So(Start(context.Background(), w, NewRoutingSlip(), messaging.Dispatch{}), should.Equal, ErrNoSteps)
	f.So(ErrNoSteps.Error(), should.Equal, "acemq: this routing slip has no steps in it")
	slip := NewRoutingSlip().Then("a", "ka", "first").Then("b", "kb", "second")
	f.So(Start(context.Background(), w, slip, messaging.Dispatch{MessageID: "s1", Payload: []byte("{}")}), should.BeNil)
	f.So(w.written, should.HaveLength, 1)
	f.So(w.written[0].Topic, should.Equal, "a")
	f.So(w.written[0].RoutingKey, should.Equal, "ka")
	f.So(w.written[0].Mandatory, should.BeTrue)
	f.So(w.written[0].Headers[HeaderRoutingSlip], should.ContainSubstring, `"routingKey":"kb"`)
}

func TestFollowSlipFixture(t *testing.T) {
	gunit.Run(new(FollowSlipFixture), t)
}

// FollowSlipFixture runs one delivery at a time through FollowSlip over a
// fake writer and settler.
type FollowSlipFixture struct {
	*gunit.Fixture
	writer  *fakeWriter
	settler *fakeSettler
	monitor *fakeMonitor
	ran     int
	fail    error
}

func (f *FollowSlipFixture) Setup() {
	f.writer = &fakeWriter{}
	f.settler = newFakeSettler()
	f.monitor = &fakeMonitor{}
}

func (f *FollowSlipFixture) handle(d messaging.Delivery, options ...Option) {
	options = append([]Option{Options.Monitor(f.monitor)}, options...)
	h := FollowSlip(f.writer, func(ctx context.Context, d messaging.Delivery, o order) (order, error) {
		f.ran++
		o.Total++
		return o, f.fail
	}, options...)
	if d.MessageID == "" {
		d.MessageID = "m1"
	}
	d.CorrelationID, d.Payload = "corr", []byte(`{"id":"o1","total":1}`)
	h.Handle(messaging.WithSettler(context.Background(), f.settler), d)
}

func (f *FollowSlipFixture) jsonSlip(done int) messaging.Delivery {
	slip := NewRoutingSlip().Then("e1", "k1", "one").Then("e2", "k2", "two").Then("e3", "k3", "three")
	for range done {
		slip = slip.Advance(time.Now())
	}
	encoded, _ := json.Marshal(slip)
	return messaging.Delivery{Headers: map[string]any{HeaderRoutingSlip: string(encoded), "x-tenant": "t1"}}
}

func (f *FollowSlipFixture) TestAJSONSlipIsForwardedToItsNextStopInTheSameForm() {
	f.handle(f.jsonSlip(0))
	f.So(f.writer.written, should.HaveLength, 1)
	hop := f.writer.written[0]
	f.So(hop.Topic, should.Equal, "e2")
	f.So(hop.RoutingKey, should.Equal, "k2")
	f.So(hop.Mandatory, should.BeTrue)
	f.So(hop.CorrelationID, should.Equal, "corr")
	f.So(hop.CausationID, should.Equal, "m1")
	f.So(hop.Route, should.BeNil)
	f.So(hop.Headers, should.HaveLength, 1) // the slip; the input's own headers stay behind
	slip, err := ParseSlip([]byte(hop.Headers[HeaderRoutingSlip].(string)))
	f.So(err, should.BeNil)
	f.So(slip.Done(), should.HaveLength, 1)
	f.So(slip.Remaining(), should.HaveLength, 2)
	f.So(string(hop.Payload), should.Equal, `{"id":"o1","total":2}`)
	f.So(f.settler.order, should.BeEmpty)
}

func (f *FollowSlipFixture) TestTheLastStopCompletesTheRun() {
	f.handle(f.jsonSlip(2), Options.InPipeline("orders"))
	f.So(f.ran, should.Equal, 1)
	f.So(f.writer.written, should.BeEmpty)
	f.So(f.settler.order, should.BeEmpty)
	f.So(f.monitor.runs, should.HaveLength, 1)
	f.So(f.monitor.runs[0].Outcome, should.Equal, OutcomeCompleted)
	f.So(f.monitor.runs[0].Step, should.Equal, "three") // the stop it did
}

func (f *FollowSlipFixture) TestADeclaredRouteIsForwardedAlongTheRouteWithItsRunID() {
	d := messaging.Delivery{Route: []string{"one", "two", "three"}, RoutePosition: 1, RouteID: "run-7"}
	f.handle(d, Options.AlongRoute(NewRoute("orders", "one", "two", "three")))
	f.So(f.writer.written, should.HaveLength, 1)
	hop := f.writer.written[0]
	f.So(hop.Topic, should.Equal, "orders")
	f.So(hop.RoutingKey, should.Equal, "three")
	f.So(hop.Route, should.Equal, []string{"one", "two", "three"})
	f.So(hop.RoutePosition, should.Equal, 2)
	f.So(hop.RouteID, should.Equal, "run-7")
	f.So(hop.Headers, should.BeNil)
}

func (f *FollowSlipFixture) TestADeclaredRouteWithoutAlongRouteIsRejected() {
	f.handle(messaging.Delivery{Route: []string{"one", "two"}})
	f.So(f.ran, should.Equal, 0)
	f.So(f.settler.order, should.Equal, []string{"m1 rejected"})
	f.So(f.settler.reason("m1"), should.Equal, "acemq: message m1 carries a declared route (one,two) but this handler was not given one, so a step name cannot be turned into somewhere to publish. Pass patterns.AlongRoute(route) naming the pipeline these steps belong to")
	f.So(messaging.IsFatal(f.settler.decisions["m1"].Reason), should.BeTrue)
}

func (f *FollowSlipFixture) TestNoSlipIsRejected() {
	f.handle(messaging.Delivery{})
	f.So(f.settler.order, should.Equal, []string{"m1 rejected"})
	f.So(f.settler.reason("m1"), should.Equal, "acemq: message m1 has no routing slip, so there is nowhere to send it next")
	f.So(f.monitor.count("refused"), should.Equal, 1)
}

func (f *FollowSlipFixture) TestAnUnreadableSlipIsRejected() {
	f.handle(messaging.Delivery{Headers: map[string]any{HeaderRoutingSlip: "{"}})
	f.So(f.settler.order, should.Equal, []string{"m1 rejected"})
	f.So(errors.Is(f.settler.decisions["m1"].Reason, ErrUnreadableSlip), should.BeTrue)
	f.So(f.settler.reason("m1"), should.ContainSubstring, "cannot read the routing slip")
}

func (f *FollowSlipFixture) TestAStepErrorRetriesAndAFailedForwardRetriesWithTheSeedText() {
	f.fail = errors.New("later")
	f.handle(f.jsonSlip(0))
	f.So(f.settler.order, should.Equal, []string{"m1 retried"})

	f.fail = nil
	f.settler = newFakeSettler()
	f.writer.fail = messaging.ErrUnroutable
	f.handle(f.jsonSlip(0))
	f.So(f.settler.reason("m1"), should.StartWith, "acemq: one is done for message m1 but the next step did not go out: ")
}

// FuzzParseSlip: the slip header decoder never panics, and what it reads
// writes back as JSON that reads the same.
func FuzzParseSlip(f *testing.F) {
	f.Add([]byte(`{"steps":[{"exchange":"orders-events","routingKey":"order.charge","name":"charge"}],"done":[{"exchange":"orders-events","routingKey":"order.validate","name":"validate","completedAt":"2026-02-03T04:05:06Z"}]}`))
	f.Add([]byte(`{"steps":[]}`))
	f.Add([]byte(`{"steps":null,"done":[{}]}`))
	f.Add([]byte(`{"done":[{"completedAt":"2026-02-03T04:05:06.123456789+02:00"}]}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, value []byte) {
		slip, err := ParseSlip(value)
		if err != nil {
			if !errors.Is(err, ErrUnreadableSlip) {
				t.Fatalf("error %v does not wrap ErrUnreadableSlip", err)
			}
			return
		}
		encoded, err := json.Marshal(slip)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSlip(encoded)
		if err != nil {
			t.Fatalf("%s does not read back: %v", encoded, err)
		}
		if fmt.Sprint(again.steps, again.done) != fmt.Sprint(slip.steps, slip.done) {
			t.Fatalf("read back %v %v; want %v %v", again.steps, again.done, slip.steps, slip.done)
		}
	})
}
