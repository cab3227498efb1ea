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
	"github.com/warrenmq/messaging/retrypolicy"
)

func TestOutcomesFixture(t *testing.T) {
	gunit.Run(new(OutcomesFixture), t)
}

type OutcomesFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	monitor   *fakeMonitor
	// waited is how long the last Handle waited in the process, on the
	// synctest bubble's clock.
	waited time.Duration
	// deadline, when set, ends the handler's context that long after Handle
	// began.
	deadline time.Duration
	results  []error
}

func (f *OutcomesFixture) Setup() {
	f.connector = &fakeConnector{}
	f.monitor = &fakeMonitor{}
}

// handle runs one Handle whose inner handler applies outcome to each delivery.
func (f *OutcomesFixture) handle(outcome func(ctx context.Context, d messaging.Delivery) error, options []Option, deliveries ...messaging.Delivery) any {
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, m := range messages {
			f.results = append(f.results, outcome(ctx, m.(messaging.Delivery)))
		}
	})
	handler := New(f.connector, inner, append([]Option{
		Options.FullDelivery(true), Options.Monitor(f.monitor),
	}, options...)...)
	messages := make([]any, len(deliveries))
	for i, d := range deliveries {
		messages[i] = d
	}
	return f.run(handler, messages)
}

// run hands messages to handler in a synctest bubble, with a context that
// ends after f.deadline when it is set, and records how long it waited.
func (f *OutcomesFixture) run(handler messaging.Handler, messages []any) (value any) {
	f.waited = elapsed(f.T().(*testing.T), func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if f.deadline > 0 {
			ctx, cancel = context.WithTimeout(ctx, f.deadline)
		}
		defer cancel()
		value = recovered(func() { handler.Handle(ctx, messages...) })
	})
	return value
}

func (f *OutcomesFixture) TestReject() {
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Reject(ctx, d, errors.New("nope"))
	}, nil, delivery("a"))
	f.So(value, should.BeNil)
	f.So(f.results, should.Equal, []error{nil})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler rejected it: nope"})
	f.So(f.monitor.events, should.Equal, []string{"q dead_lettered the handler rejected it: nope"})
}

func (f *OutcomesFixture) TestParkWithoutAReason() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Park(ctx, d, nil) }, nil, delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.parked a: no reason given"})
	f.So(f.monitor.events, should.Equal, []string{"q parked no reason given"})
}

func (f *OutcomesFixture) TestRetryWaitsInProcessAndAdvancesTheAttempt() {
	options := []Option{Options.Policy(retrypolicy.Exponential(5, time.Second, time.Minute).WithJitter(0))}
	second := delivery("a")
	second.Attempt = 2
	second.Error = "stale"
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, second)
	f.So(f.waited, should.Equal, 2*time.Second)
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
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, nil) }, nil, first)
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 2)
	f.So(f.waited, should.Equal, time.Duration(0))
}

func (f *OutcomesFixture) TestRetryWithTheBudgetSpentDeadLetters() {
	spent := delivery("a")
	spent.Attempt = 3
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("still down"))
	}, []Option{Options.Policy(retrypolicy.Fixed(3, 0))}, spent)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 3 attempts: still down"})
}

func (f *OutcomesFixture) TestRetryOfAFatalErrorDeadLettersAtOnce() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, messaging.Fatalf("schema %d unknown", 9))
	}, nil, delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler reported an unprocessable message: schema 9 unknown"})
}

func (f *OutcomesFixture) TestALongRetryWaitGoesThroughABrokerRung() {
	f.connector.declarer = true
	options := []Option{Options.Policy(retrypolicy.Fixed(5, 2*time.Minute))}
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"), delivery("bb"))
	f.So(f.waited, should.Equal, time.Duration(0))
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.2m 2m0s"}) // once per connection
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 2)
	f.So(dispatches[0].RoutingKey, should.Equal, "q.retry.2m")
	f.So(dispatches[0].Attempt, should.Equal, 2)
	f.So(dispatches[0].Mandatory, should.BeTrue)
}

func (f *OutcomesFixture) TestWithoutADeclarerAWaitAtTheThresholdIsHeldInProcess() {
	options := []Option{
		Options.Policy(retrypolicy.Fixed(5, time.Minute).WaitInBrokerFrom(time.Minute)),
	}
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
	f.So(value, should.BeNil)
	f.So(f.waited, should.Equal, time.Minute)
	f.So(f.connector.dispatches()[0].RoutingKey, should.Equal, "q")
}

func (f *OutcomesFixture) TestWithoutADeclarerAWaitBeyondTheThresholdFailsInsteadOfHoldingTheSlot() {
	options := []Option{Options.Policy(retrypolicy.Fixed(5, time.Minute))} // threshold 30 s
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
	f.So(value, should.NotBeNil)
	f.So(f.results[0], should.NotBeNil)
	f.So(f.results[0].Error(), should.ContainSubstring, "WaitInBrokerFrom")
	f.So(errors.Is(f.results[0], errNoDeclarer), should.BeTrue)
	f.So(f.waited, should.Equal, time.Duration(0))
	f.So(f.connector.dispatches(), should.BeEmpty)
	f.So(f.monitor.events[0], should.StartWith, "q rung_missing retry rung q.retry.1m: ")
	f.So(f.monitor.events[1], should.StartWith, "q set_aside_failed ")
}

func (f *OutcomesFixture) TestAFailedRungDeclarationBeyondTheThresholdFails() {
	f.connector.declarer = true
	f.connector.declareErr = errors.New("access refused")
	options := []Option{Options.Policy(retrypolicy.Fixed(5, 2*time.Minute))}
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
	f.So(value, should.NotBeNil)
	f.So(errors.Is(f.results[0], f.connector.declareErr), should.BeTrue)
	f.So(f.waited, should.Equal, time.Duration(0))
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *OutcomesFixture) TestAFailedRungDeclarationAtTheThresholdWaitsInProcess() {
	f.connector.declarer = true
	f.connector.declareErr = errors.New("access refused")
	options := []Option{Options.Policy(retrypolicy.Fixed(5, 30*time.Second))}
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
	f.So(value, should.BeNil)
	f.So(f.waited, should.Equal, 30*time.Second)
	f.So(f.connector.targets(), should.Equal, []string{"q a: "})
}

func (f *OutcomesFixture) TestAWaitBelowTheThresholdStaysInProcess() {
	f.connector.declarer = true
	options := []Option{
		Options.Policy(retrypolicy.Fixed(5, 59*time.Second).WaitInBrokerFrom(time.Minute)),
	}
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, nil) }, options, delivery("a"))
	f.So(f.waited, should.Equal, 59*time.Second)
	f.So(f.connector.declared, should.BeEmpty)
}

func (f *OutcomesFixture) TestInProgressKeepsTheAttempt() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, 3*time.Second)
	}, []Option{Options.Policy(retrypolicy.Fixed(1, 0))}, delivery("a"))
	f.So(f.waited, should.Equal, 3*time.Second)
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 1)
	f.So(f.connector.dispatches()[0].RoutingKey, should.Equal, "q")
	f.So(f.monitor.events, should.Equal, []string{"q in_progress "})
}

func (f *OutcomesFixture) TestALongInProgressIsHeldByTheBrokerNotByAWorker() {
	f.connector.declarer = true
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, 10*time.Minute)
	}, []Option{Options.Policy(retrypolicy.Fixed(1, 0))}, delivery("a"))
	f.So(f.waited, should.Equal, time.Duration(0))
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.10m 10m0s"})
	f.So(f.connector.dispatches()[0].RoutingKey, should.Equal, "q.retry.10m")
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 1)
	f.So(f.monitor.events, should.Equal, []string{"q in_progress "})
}

func (f *OutcomesFixture) TestALongInProgressWithoutRungsIsNotHeldInTheProcess() {
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, 10*time.Minute)
	}, nil, delivery("a"))
	f.So(fmt.Sprint(value), should.ContainSubstring, "cannot be held by the broker")
	f.So(f.waited, should.Equal, time.Duration(0))
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *OutcomesFixture) TestACancelledWaitIsAFailure() {
	f.deadline = 500 * time.Millisecond
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, time.Second)
	}, nil, delivery("a"))
	f.So(value, should.NotBeNil)
	f.So(f.results[0], should.NotBeNil)
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *OutcomesFixture) TestAFailedOutcomeIgnoredByTheHandlerStillPanics() {
	f.connector.writeErr = errors.New("channel closed")
	value := f.handle(func(ctx context.Context, d messaging.Delivery) error {
		_ = messaging.Reject(ctx, d, errors.New("nope"))
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
				if err := messaging.Reject(ctx, d, errors.New("nope")); err != nil {
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
	err := messaging.Reject(context.Background(), delivery("a"), nil)
	f.So(errors.Is(err, messaging.ErrNoSettler), should.BeTrue)
}

func (f *OutcomesFixture) retryOnce(options ...Option) {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, options, delivery("a"))
}

func (f *OutcomesFixture) TestTwoDelaysNeverShareARungNameWithDifferentTTLs() {
	f.connector.declarer = true
	f.retryOnce(Options.Policy(retrypolicy.Fixed(5, 30*time.Second)))
	f.retryOnce(Options.Policy(retrypolicy.Fixed(5, 30500*time.Millisecond)))
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.30s 30s", "q q.retry.31s 31s"})
	f.So(f.connector.targets(), should.Equal, []string{"q.retry.30s a: ", "q.retry.31s a: "})
	f.So(f.waited, should.Equal, time.Duration(0))
}

func (f *OutcomesFixture) TestABrokerWaitIsHeldByTheRungOfThePolicysLadder() {
	f.connector.declarer = true
	third := delivery("a")
	third.Attempt = 3 // Exponential(6, 10s, 5m): the wait after attempt 3 is 40 s
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, []Option{Options.Policy(retrypolicy.Exponential(6, 10*time.Second, 5*time.Minute))}, third)
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.40s 40s"}) // never jittered
	f.So(f.connector.targets(), should.Equal, []string{"q.retry.40s a: "})
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 4)
	f.So(f.waited, should.Equal, time.Duration(0))
}

func (f *OutcomesFixture) TestAFractionalPolicyWaitIsHeldByTheRungOfItsWholeSecondsRoundedUp() {
	f.connector.declarer = true
	f.retryOnce(Options.Policy(retrypolicy.Fixed(3, 30500*time.Millisecond)))
	want, _ := retrypolicy.Fixed(3, 30500*time.Millisecond).RungFor("q", 30500*time.Millisecond)
	f.So(want.Name, should.Equal, "q.retry.31s")
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.31s 31s"})
	f.So(f.connector.targets(), should.Equal, []string{"q.retry.31s a: "})
}

func (f *OutcomesFixture) TestAThresholdOfZeroNeverHoldsAWaitInTheBroker() {
	f.connector.declarer = true
	f.retryOnce(Options.Policy(retrypolicy.Fixed(5, 2*time.Minute).WaitInBrokerFrom(0)))
	f.So(f.connector.declared, should.BeEmpty)
	f.So(f.waited, should.Equal, 2*time.Minute)
	f.So(f.connector.targets(), should.Equal, []string{"q a: "})
}

func (f *OutcomesFixture) TestAPolicyThatWaitsInTheBrokerFromZeroNeverDoes() {
	f.connector.declarer = true
	f.retryOnce(Options.Policy(retrypolicy.Fixed(3, 2*time.Minute).WaitInBrokerFrom(0)))
	f.So(f.connector.declared, should.BeEmpty)
	f.So(f.waited, should.Equal, 2*time.Minute)
	f.So(f.connector.targets(), should.Equal, []string{"q a: "})
}

func (f *OutcomesFixture) TestThePolicysThresholdSendsAShortWaitToTheBroker() {
	f.connector.declarer = true
	f.retryOnce(Options.Policy(retrypolicy.Fixed(3, 2*time.Second).WaitInBrokerFrom(time.Second)))
	f.So(f.connector.declared, should.Equal, []string{"q q.retry.2s 2s"})
	f.So(f.waited, should.Equal, time.Duration(0))
}

// handleRerun runs one Handle whose inner handler is re-run, as an inner retry
// decorator would: the first run applies outcome to each delivery and then
// panics for another reason; the second applies it again and returns.
func (f *OutcomesFixture) handleRerun(outcome func(ctx context.Context, d messaging.Delivery) error, options []Option, deliveries ...messaging.Delivery) any {
	runs := 0
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		runs++
		for _, m := range messages {
			f.results = append(f.results, outcome(ctx, m.(messaging.Delivery)))
		}
		if runs == 1 {
			panic(errors.New("the database went away"))
		}
	})
	handler := New(f.connector, rerun(3, inner), append([]Option{
		Options.FullDelivery(true), Options.Monitor(f.monitor),
	}, options...)...)
	messages := make([]any, len(deliveries))
	for i, d := range deliveries {
		messages[i] = d
	}
	return f.run(handler, messages)
}

func (f *OutcomesFixture) TestAnOutcomeRepeatedByAnInnerRetryPublishesOnce() {
	cases := []struct {
		name     string
		declarer bool
		options  []Option
		outcome  func(ctx context.Context, d messaging.Delivery) error
		target   string
		event    string
	}{
		{"reject", false, nil, func(ctx context.Context, d messaging.Delivery) error {
			return messaging.Reject(ctx, d, errors.New("nope"))
		},
			"q.dlq", "q dead_lettered the handler rejected it: nope"},
		{"park", false, nil, func(ctx context.Context, d messaging.Delivery) error {
			return messaging.Park(ctx, d, errors.New("later"))
		},
			"q.parked", "q parked the handler parked it: later"},
		{"retry", false, nil, func(ctx context.Context, d messaging.Delivery) error {
			return messaging.Retry(ctx, d, errors.New("again"))
		},
			"q", "q retried "},
		{"retry through a rung", true, []Option{Options.Policy(retrypolicy.Fixed(5, time.Minute))},
			func(ctx context.Context, d messaging.Delivery) error {
				return messaging.Retry(ctx, d, errors.New("again"))
			},
			"q.retry.1m", "q retried "},
		{"retry of a fatal error", false, nil, func(ctx context.Context, d messaging.Delivery) error {
			return messaging.Retry(ctx, d, messaging.Fatalf("bad"))
		},
			"q.dlq", "q dead_lettered the handler reported an unprocessable message: bad"},
		{"in progress", false, nil, func(ctx context.Context, d messaging.Delivery) error {
			return messaging.InProgress(ctx, d, time.Second)
		},
			"q", "q in_progress "},
	}
	for _, c := range cases {
		f.connector = &fakeConnector{declarer: c.declarer}
		f.monitor = &fakeMonitor{}
		f.results = nil
		value := f.handleRerun(c.outcome, c.options, delivery("a"))
		f.So(value, should.BeNil)
		f.So(f.results, should.Equal, []error{nil, nil})
		dispatches := f.connector.dispatches()
		f.So(len(dispatches), should.Equal, 1)
		if len(dispatches) == 1 {
			f.So(dispatches[0].RoutingKey+" "+c.name, should.Equal, c.target+" "+c.name)
		}
		f.So(f.monitor.events, should.Equal, []string{c.event})
	}
}

func (f *OutcomesFixture) TestAnAutomaticDeadLetterAfterAnOutcomeIsNotPublishedTwice() {
	// The handler rejects a, then the batch keeps failing: the decorator must
	// not dead-letter a second time what the handler already settled.
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, m := range messages {
			if err := messaging.Reject(ctx, m.(messaging.Delivery), errors.New("nope")); err != nil {
				panic(err)
			}
		}
		panic(errors.New("boom"))
	})
	value := recovered(func() {
		New(f.connector, rerun(3, inner), Options.FullDelivery(true), Options.Monitor(f.monitor)).Handle(context.Background(), delivery("a"))
	})
	f.So(value, should.BeNil)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler rejected it: nope"})
}

func (f *OutcomesFixture) TestSetAsideCopiesDropThePerMessageTTLWhileRepublishesKeepIt() {
	expiring := delivery("a")
	expiring.Expiration = 10 * time.Second
	outcomes := []func(ctx context.Context, d messaging.Delivery) error{
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Reject(ctx, d, nil) },
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Park(ctx, d, nil) },
		func(ctx context.Context, d messaging.Delivery) error {
			return messaging.Retry(ctx, d, messaging.Fatalf("bad"))
		},
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, nil) },
		func(ctx context.Context, d messaging.Delivery) error {
			return messaging.InProgress(ctx, d, time.Second)
		},
	}
	for _, outcome := range outcomes {
		f.handle(outcome, nil, expiring)
	}
	f.connector.declarer = true // a rung republish keeps it too
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, nil) },
		[]Option{Options.Policy(retrypolicy.Fixed(5, time.Minute))}, expiring)
	var got []string
	for _, d := range f.connector.dispatches() {
		got = append(got, fmt.Sprintf("%s %s", d.RoutingKey, d.Expiration))
	}
	f.So(got, should.Equal, []string{"q.dlq 0s", "q.parked 0s", "q.dlq 0s", "q 10s", "q 10s", "q.retry.1m 10s"})
}
