package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
)

type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

type invoice struct {
	Order string `json:"order"`
	Due   int    `json:"due"`
}

func TestThenFixture(t *testing.T) {
	gunit.Run(new(ThenFixture), t)
}

// ThenFixture runs a batch of three orders (m0, m1, m2) through Then over a
// fake writer and settler.
type ThenFixture struct {
	*gunit.Fixture
	writer   *fakeWriter
	settler  *fakeSettler
	monitor  *fakeMonitor
	batch    []messaging.Delivery
	runs     map[string]int
	step     func(d messaging.Delivery, in order) (invoice, bool, error)
	observed []RunFinished
	first    time.Time
}

func (f *ThenFixture) Setup() {
	f.writer = &fakeWriter{}
	f.settler = newFakeSettler()
	f.monitor = &fakeMonitor{}
	f.runs = map[string]int{}
	f.first = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 {
		id := fmt.Sprint("m", i)
		f.batch = append(f.batch, messaging.Delivery{MessageID: id, CorrelationID: "c" + id, SourceQueue: "orders",
			FirstSeen: f.first, Payload: fmt.Appendf(nil, `{"id":"o%d","total":%d}`, i, 10*i)})
	}
	f.step = func(d messaging.Delivery, in order) (invoice, bool, error) {
		return invoice{Order: in.ID, Due: in.Total + 1}, true, nil
	}
}

func (f *ThenFixture) handler(options ...Option) messaging.Handler {
	options = append([]Option{Options.Monitor(f.monitor)}, options...)
	return Then(f.writer, Address{Topic: "billing", RoutingKey: "invoice.due"},
		func(ctx context.Context, d messaging.Delivery, in order) (invoice, bool, error) {
			f.runs[d.MessageID]++
			return f.step(d, in)
		}, options...)
}

func (f *ThenFixture) context() context.Context {
	ctx := messaging.WithSettler(context.Background(), f.settler)
	return WithRunObserver(ctx, RunObserverFunc(func(_ context.Context, run RunFinished) { f.observed = append(f.observed, run) }))
}

// handle runs the batch as full deliveries (a raw transport's stack).
func (f *ThenFixture) handle(h messaging.Handler) (value any) {
	messages := make([]any, len(f.batch))
	for i, d := range f.batch {
		messages[i] = d
	}
	defer func() { value = recover() }()
	h.Handle(f.context(), messages...)
	return nil
}

func (f *ThenFixture) TestTheNextMessageCarriesTheCorrelationAndTheInputAsItsCause() {
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.writer.written, should.HaveLength, 3)
	for i, hop := range f.writer.written {
		id := fmt.Sprint("m", i)
		f.So(hop.Topic, should.Equal, "billing")
		f.So(hop.RoutingKey, should.Equal, "invoice.due")
		f.So(hop.CorrelationID, should.Equal, "c"+id)
		f.So(hop.CausationID, should.Equal, id)
		f.So(hop.Mandatory, should.BeTrue)
		f.So(hop.FirstSeen, should.Equal, f.first)
		f.So(hop.ContentType, should.Equal, "application/json")
		f.So(hop.MessageID, should.Equal, hopID(id, "then billing/invoice.due"))
		var got invoice
		f.So(json.Unmarshal(hop.Payload, &got), should.BeNil)
		f.So(got, should.Equal, invoice{Order: fmt.Sprint("o", i), Due: 10*i + 1})
	}
	f.So(f.settler.order, should.BeEmpty) // acknowledged with the batch
	f.So(f.monitor.count("forwarded"), should.Equal, 3)
}

func (f *ThenFixture) TestDecodedMessagesAreTakenFromTheStack() {
	messages := []any{order{ID: "a"}, order{ID: "b"}, order{ID: "c"}}
	ctx := messaging.WithDeliveries(f.context(), f.batch)
	f.handler().Handle(ctx, messages...)
	f.So(f.writer.written, should.HaveLength, 3)
	var got invoice
	f.So(json.Unmarshal(f.writer.written[1].Payload, &got), should.BeNil)
	f.So(got.Order, should.Equal, "b")
}

func (f *ThenFixture) TestAPointerTheStackDecodedIsTakenAsItsValue() {
	f.batch[0].Message = &order{ID: "pointed"}
	f.So(f.handle(f.handler()), should.BeNil)
	var got invoice
	f.So(json.Unmarshal(f.writer.written[0].Payload, &got), should.BeNil)
	f.So(got.Order, should.Equal, "pointed")
}

func (f *ThenFixture) TestAMessageDecodedAsAnotherTypeIsParked() {
	f.batch[0].Message = invoice{}
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m0 parked"})
	f.So(f.settler.reason("m0"), should.Equal, "acemq: message m0 was decoded as flow.invoice but this step consumes flow.order")
}

func (f *ThenFixture) TestTheHopIdIsTheSameForTheSameInputAndDifferentOtherwise() {
	f.So(hopID("m0", "then a/b"), should.Equal, hopID("m0", "then a/b"))
	f.So(hopID("m0", "then a/b"), should.NotEqual, hopID("m1", "then a/b"))
	f.So(hopID("m0", "then a/b"), should.NotEqual, hopID("m0", "then a/c"))
	f.So(hopID("m0", "x"), should.HaveLength, 36)
}

func (f *ThenFixture) TestFalsePublishesNothingAndReportsTheRunEndedEarlyWhenNamed() {
	f.step = func(messaging.Delivery, order) (invoice, bool, error) { return invoice{}, false, nil }
	f.So(f.handle(f.handler(Options.InPipeline("billing"), Options.AtStep("invoice"))), should.BeNil)
	f.So(f.writer.written, should.BeEmpty)
	f.So(f.settler.order, should.BeEmpty)
	f.So(f.monitor.count("run_ended_early"), should.Equal, 3)
	f.So(f.observed, should.HaveLength, 3)
	f.So(f.observed[0].Pipeline, should.Equal, "billing")
	f.So(f.observed[0].Step, should.Equal, "invoice")
	f.So(f.observed[0].Outcome, should.Equal, OutcomeEndedEarly)
	f.So(f.observed[0].Age, should.BeGreaterThan, time.Hour) // since the run's first message
}

func (f *ThenFixture) TestAnUnnamedStepReportsNothing() {
	f.step = func(messaging.Delivery, order) (invoice, bool, error) { return invoice{}, false, nil }
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.observed, should.BeEmpty)
	f.So(f.monitor.count("run_ended_early"), should.Equal, 0)
}

func (f *ThenFixture) TestAnErrorRetriesAndAFatalOneRejects() {
	f.step = func(d messaging.Delivery, in order) (invoice, bool, error) {
		switch d.MessageID {
		case "m0":
			return invoice{}, false, errors.New("stock service said later")
		case "m1":
			return invoice{}, false, messaging.Fatalf("no such customer")
		}
		return invoice{}, true, nil
	}
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m0 retried", "m1 rejected"})
	f.So(f.writer.written, should.HaveLength, 1)
	f.So(f.monitor.count("step_failed"), should.Equal, 2)
}

func (f *ThenFixture) TestAPanicInTheStepIsItsFailure() {
	f.step = func(d messaging.Delivery, in order) (invoice, bool, error) {
		if d.MessageID == "m1" {
			panic("index out of range")
		}
		return invoice{}, true, nil
	}
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m1 retried"})
	f.So(f.settler.reason("m1"), should.ContainSubstring, "the step panicked on message m1: index out of range")
}

func (f *ThenFixture) TestAnOutageHoldsTheBatchWithoutSettling() {
	f.step = func(d messaging.Delivery, in order) (invoice, bool, error) {
		return invoice{}, false, messaging.Outage(errors.New("database away"))
	}
	value := f.handle(f.handler())
	err, _ := value.(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(f.settler.order, should.BeEmpty)
}

func (f *ThenFixture) TestTheHopsOfABatchGoOutInOneWriteAndEachFailureIsItsInputs() {
	f.writer.failOnce = func(d messaging.Dispatch) error {
		if d.CausationID == "m1" {
			return fmt.Errorf("returned: %w", messaging.ErrUnroutable)
		}
		return nil
	}
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.writer.calls, should.Equal, 1)
	f.So(f.writer.written, should.HaveLength, 2)
	f.So(f.settler.order, should.Equal, []string{"m1 retried"})
	f.So(f.settler.reason("m1"), should.StartWith, "acemq: the work for message m1 is done but the next message did not go out: ")
	f.So(f.monitor.count("forwarded"), should.Equal, 2)
	f.So(f.monitor.count("forward_failed"), should.Equal, 1)
}

func (f *ThenFixture) TestAWriteLostWholeHoldsTheBatch() {
	f.writer.fail = fmt.Errorf("batch writer: commit 3 message(s): %w", messaging.ErrCommitTimeout)
	value := f.handle(f.handler())
	err, _ := value.(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, messaging.ErrCommitTimeout), should.BeTrue)
	f.So(f.settler.order, should.BeEmpty)
	f.So(f.writer.calls, should.Equal, 1)
}

func (f *ThenFixture) TestTheSameDeliveryTwiceInABatchHasOneHop() {
	f.batch[2] = f.batch[0]
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.writer.written, should.HaveLength, 2)
}

func (f *ThenFixture) TestAFailedPublishRetriesTheInputWithTheSeedText() {
	f.writer.fail = fmt.Errorf("publish: %w", messaging.ErrUnroutable)
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m0 retried", "m1 retried", "m2 retried"})
	f.So(f.settler.reason("m0"), should.StartWith, "acemq: the work for message m0 is done but the next message did not go out: ")
	f.So(errors.Is(f.settler.decisions["m0"].Reason, messaging.ErrUnroutable), should.BeTrue)
	f.So(f.monitor.count("forward_failed"), should.Equal, 3)
}

func (f *ThenFixture) TestANextMessageThatCannotTravelRejectsTheInput() {
	f.writer.fail = &messaging.FieldError{Field: "Payload", Size: 200 << 20, Limit: 128 << 20}
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m0 rejected", "m1 rejected", "m2 rejected"})
	f.So(messaging.IsFatal(f.settler.decisions["m0"].Reason), should.BeTrue)
	f.So(errors.Is(f.settler.decisions["m0"].Reason, messaging.ErrWireLimit), should.BeTrue)
}

func (f *ThenFixture) TestABodyThatDoesNotDecodeIsParked() {
	f.batch[1].Payload = []byte("not json")
	f.So(f.handle(f.handler()), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"m1 parked"})
	f.So(f.settler.reason("m1"), should.ContainSubstring, "cannot be read as flow.order")
}

func (f *ThenFixture) TestWithoutASettlerTheBatchFailsFatally() {
	h := f.handler()
	f.step = func(messaging.Delivery, order) (invoice, bool, error) { return invoice{}, false, errors.New("x") }
	func() {
		defer func() {
			err, _ := recover().(error)
			f.So(messaging.IsFatal(err), should.BeTrue)
			f.So(errors.Is(err, messaging.ErrNoSettler), should.BeTrue)
		}()
		h.Handle(context.Background(), f.batch[0])
	}()
}

// TestABatchRunAgainByRetryPublishesEachHopOnce: m1's step fails with an
// outage on its first run, so retry runs the whole batch again, nothing
// published; on the second run the three hops go out in one write, in which
// m2's arrival is unknown (an outage), so retry runs the batch a third time:
// m0's and m1's hops, which landed, are not published again, and m2's is.
func (f *ThenFixture) TestABatchRunAgainByRetryPublishesEachHopOnce() {
	outages := 1
	f.step = func(d messaging.Delivery, in order) (invoice, bool, error) {
		if d.MessageID == "m1" && outages > 0 {
			outages--
			return invoice{}, false, messaging.Outage(errors.New("stock service away"))
		}
		return invoice{Order: in.ID}, true, nil
	}
	f.writer.failOnce = func(d messaging.Dispatch) error {
		if d.CausationID == "m2" {
			return messaging.ErrArrivalUnknown
		}
		return nil
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := retry.New(f.handler(), retry.Options.Backoff(time.Millisecond), retry.Options.MaxOutageBackoff(time.Millisecond), retry.Options.Logger(quiet))
	f.So(f.handle(h), should.BeNil)
	f.So(f.runs, should.Equal, map[string]int{"m0": 3, "m1": 3, "m2": 2})
	f.So(f.writer.calls, should.Equal, 2) // m0, m1 and m2 (which failed), then m2 alone
	ids := map[string]int{}
	for _, hop := range f.writer.written {
		ids[hop.CausationID]++
	}
	f.So(ids, should.Equal, map[string]int{"m0": 1, "m1": 1, "m2": 1})
	f.So(f.monitor.count("forwarded"), should.Equal, 3)
	f.So(f.settler.order, should.BeEmpty)
}
