package deadletter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestOutcomesFixture(t *testing.T) {
	gunit.Run(new(OutcomesFixture), t)
}

type OutcomesFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	monitor   *fakeMonitor
	sleeper   *fakeSleeper
	results   []error
}

func (f *OutcomesFixture) Setup() {
	f.connector = &fakeConnector{}
	f.monitor = &fakeMonitor{}
	f.sleeper = &fakeSleeper{}
}

// handle runs one Handle whose inner handler applies outcome to each delivery.
func (f *OutcomesFixture) handle(outcome func(ctx context.Context, d messaging.Delivery) error, options []option, deliveries ...messaging.Delivery) any {
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, m := range messages {
			f.results = append(f.results, outcome(ctx, m.(messaging.Delivery)))
		}
	})
	handler := New(f.connector, inner, append([]option{
		Options.FullDelivery(true), Options.Monitor(f.monitor), withSleeper(f.sleeper.sleep),
	}, options...)...)
	messages := make([]any, len(deliveries))
	for i, d := range deliveries {
		messages[i] = d
	}
	return recovered(func() { handler.Handle(context.Background(), messages...) })
}

func (f *OutcomesFixture) TestReject() {
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Reject(ctx, d, errors.New("nope"))
	}, nil, delivery("a"))
	f.So(value, should.BeNil)
	f.So(f.results, should.Equal, []error{nil})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler rejected it: nope"})
	f.So(f.monitor.events, should.Equal, []string{"q dead_lettered the handler rejected it: nope"})
}

func (f *OutcomesFixture) TestParkWithoutAReason() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return Park(ctx, d, nil) }, nil, delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.parked a: no reason given"})
	f.So(f.monitor.events, should.Equal, []string{"q parked no reason given"})
}

func (f *OutcomesFixture) TestRetryWaitsInProcessAndAdvancesTheAttempt() {
	options := []option{Options.RetryDelay(func(attempt int) time.Duration { return time.Duration(attempt) * time.Second })}
	second := delivery("a")
	second.Attempt = 2
	second.Error = "stale"
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Retry(ctx, d, errors.New("later"))
	}, options, second)
	f.So(f.sleeper.slept, should.Equal, []time.Duration{2 * time.Second})
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 1)
	f.So(dispatches[0].RoutingKey, should.Equal, "q")
	f.So(dispatches[0].Attempt, should.Equal, 3)
	f.So(dispatches[0].Error, should.Equal, "")
	f.So(dispatches[0].MessageID, should.Equal, "a")
	f.So(f.monitor.events, should.Equal, []string{"q retried "})
}

func (f *OutcomesFixture) TestRetryTreatsAMissingAttemptAsTheFirst() {
	first := delivery("a")
	first.Attempt = 0
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return Retry(ctx, d, nil) }, nil, first)
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 2)
	f.So(f.sleeper.slept, should.BeEmpty)
}

func (f *OutcomesFixture) TestRetryWithTheBudgetSpentDeadLetters() {
	spent := delivery("a")
	spent.Attempt = 3
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Retry(ctx, d, errors.New("still down"))
	}, []option{Options.MaxAttempts(3)}, spent)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 3 attempts: still down"})
}

func (f *OutcomesFixture) TestRetryOfAFatalErrorDeadLettersAtOnce() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Retry(ctx, d, messaging.Fatalf("schema %d unknown", 9))
	}, nil, delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler reported an unprocessable message: schema 9 unknown"})
}

func (f *OutcomesFixture) TestALongRetryWaitGoesThroughABrokerRung() {
	f.connector.declarer = true
	options := []option{Options.RetryDelay(func(int) time.Duration { return 2 * time.Minute })}
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"), delivery("bb"))
	f.So(f.sleeper.slept, should.BeEmpty)
	f.So(f.connector.declared, should.Equal, []string{"q 2m0s"}) // once per connection
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 2)
	f.So(dispatches[0].RoutingKey, should.Equal, "q.retry.2m")
	f.So(dispatches[0].Attempt, should.Equal, 2)
	f.So(dispatches[0].Mandatory, should.BeTrue)
}

func (f *OutcomesFixture) TestWithoutADeclarerALongWaitIsHeldInProcess() {
	options := []option{Options.RetryDelay(func(int) time.Duration { return time.Minute })}
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
	f.So(f.sleeper.slept, should.Equal, []time.Duration{time.Minute})
	f.So(f.connector.dispatches()[0].RoutingKey, should.Equal, "q")
}

func (f *OutcomesFixture) TestAWaitBelowTheThresholdStaysInProcess() {
	f.connector.declarer = true
	options := []option{
		Options.RetryDelay(func(int) time.Duration { return 59 * time.Second }),
		Options.BrokerWaitThreshold(time.Minute),
	}
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return Retry(ctx, d, nil) }, options, delivery("a"))
	f.So(f.sleeper.slept, should.Equal, []time.Duration{59 * time.Second})
	f.So(f.connector.declared, should.BeEmpty)
}

func (f *OutcomesFixture) TestInProgressKeepsTheAttempt() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return InProgress(ctx, d, 3*time.Second)
	}, []option{Options.MaxAttempts(1)}, delivery("a"))
	f.So(f.sleeper.slept, should.Equal, []time.Duration{3 * time.Second})
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 1)
	f.So(f.connector.dispatches()[0].RoutingKey, should.Equal, "q")
	f.So(f.monitor.events, should.Equal, []string{"q in_progress "})
}

func (f *OutcomesFixture) TestACancelledWaitIsAFailure() {
	f.sleeper.fail = true
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return InProgress(ctx, d, time.Second)
	}, nil, delivery("a"))
	f.So(value, should.NotBeNil)
	f.So(f.results[0], should.NotBeNil)
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *OutcomesFixture) TestAFailedOutcomeIgnoredByTheHandlerStillPanics() {
	f.connector.writeErr = errors.New("channel closed")
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		_ = Reject(ctx, d, errors.New("nope"))
		return nil
	}, nil, delivery("a"))
	f.So(fmt.Sprint(value), should.ContainSubstring, "channel closed")
	f.So(f.monitor.events[0], should.StartWith, "q set_aside_failed ")
}

func (f *OutcomesFixture) TestSettledMessagesAreNotRunAgainInIsolation() {
	var calls [][]string
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		var ids []string
		for _, m := range messages {
			ids = append(ids, m.(messaging.Delivery).MessageID)
		}
		calls = append(calls, ids)
		for _, m := range messages {
			d := m.(messaging.Delivery)
			if d.MessageID == "a" {
				if err := Reject(ctx, d, errors.New("nope")); err != nil {
					panic(err)
				}
			} else {
				panic(errors.New("boom"))
			}
		}
	})
	New(f.connector, inner, Options.FullDelivery(true)).Handle(context.Background(), delivery("a"), delivery("bb"))
	f.So(calls, should.Equal, [][]string{{"a", "bb"}, {"bb"}})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler rejected it: nope", "q.dlq bb: the handler failed: boom"})
}

func (f *OutcomesFixture) TestOutsideTheDecoratorTheOutcomesFail() {
	err := Reject(context.Background(), delivery("a"), nil)
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "deadletter.New")
}

func (f *OutcomesFixture) TestRungNames() {
	f.So(RungName("orders", 40*time.Second), should.Equal, "orders.retry.40s")
	f.So(RungName("orders", 80*time.Second), should.Equal, "orders.retry.80s")
	f.So(RungName("orders", 160*time.Second), should.Equal, "orders.retry.160s")
	f.So(RungName("orders", 2*time.Minute), should.Equal, "orders.retry.2m")
	f.So(RungName("orders", time.Hour), should.Equal, "orders.retry.1h")
	f.So(RungName("orders", 2*time.Hour), should.Equal, "orders.retry.2h")
	f.So(RungName("orders", 90*time.Minute), should.Equal, "orders.retry.90m")
	f.So(RungName("orders", 500*time.Millisecond), should.Equal, "orders.retry.0s")
	f.So(RungName("orders", 1500*time.Millisecond), should.Equal, "orders.retry.1s")
}
