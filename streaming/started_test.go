package streaming

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

func (f *ConsumerFixture) TestStartedReportsThatEverySubscriptionOpened() {
	f.inBubble(func() {
		f.listen()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.So(f.consumer.(*Consumer).Started(ctx), should.BeNil)
	})
}

func (f *ConsumerFixture) TestStartedReturnsTheFirstErrorOpeningAStream() {
	f.inBubble(func() {
		f.streams = make(chan *fakeStream) // nothing scripted: Stream fails
		f.listen()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := f.consumer.(*Consumer).Started(ctx)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, `stream "q": open stream: no stream scripted`)
		f.reopened(f.concluded()) // it keeps retrying in the background
	})
}

func (f *ConsumerFixture) TestASubscriptionWithoutWorkersFailsStarted() {
	f.inBubble(func() {
		f.listenAll(
			NewSubscription("q", SubscriptionOptions.AddWorkers(f.handler)),
			NewSubscription("r"), // no workers: never opens
		)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := f.consumer.(*Consumer).Started(ctx)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, `stream "r" has no workers`)
	})
}

func (f *ConsumerFixture) TestStartedEndsWithItsContext() {
	f.inBubble(func() {
		f.consumer = nil
		consumer := New(f.connector, Options.Subscriptions(NewSubscription("q", SubscriptionOptions.AddWorkers(f.handler))))
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Listen never started
		f.So(errors.Is(consumer.Started(ctx), context.Canceled), should.BeTrue)
		_ = consumer.Close()
		f.So(consumer.Started(context.Background()), should.NotBeNil)
	})
}

func (f *ConsumerFixture) TestStartRunsTheConsumerUntilClose() {
	f.inBubble(func() {
		f.consumer = nil
		consumer := New(f.connector, Options.Subscriptions(NewSubscription("q", SubscriptionOptions.AddWorkers(f.handler))))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.So(consumer.Start(ctx), should.BeNil)
		f.So(isClosed(consumer.Done()), should.BeFalse)
		again := consumer.Start(ctx)
		f.So(again, should.NotBeNil)
		f.So(errors.Is(again, messaging.ErrClosed), should.BeFalse)
		f.So(again.Error(), should.ContainSubstring, "already running")

		f.So(consumer.Close(), should.BeNil)
		f.So(isClosed(consumer.Done()), should.BeTrue) // Close waited for the run
		consumer.Listen()                              // returns at once: the run is over
		f.So(errors.Is(consumer.Start(ctx), messaging.ErrClosed), should.BeTrue)
	})
}

func (f *ConsumerFixture) TestAConsumerClosedBeforeItRanIsDone() {
	f.inBubble(func() {
		f.consumer = nil
		consumer := New(f.connector, Options.Subscriptions(NewSubscription("q", SubscriptionOptions.AddWorkers(f.handler))))
		f.So(consumer.Close(), should.BeNil)
		f.So(consumer.Close(), should.BeNil)
		f.So(isClosed(consumer.Done()), should.BeTrue)
		consumer.Listen() // returns at once
		f.So(errors.Is(consumer.Start(context.Background()), messaging.ErrClosed), should.BeTrue)
		f.So(f.connector.connectionCount(), should.Equal, 0)
	})
}

// TestBrokerStartedReturnsNotFoundForAMissingQueue: with topology off, a
// consumer of a queue that does not exist reports the broker's refusal from
// Started, within the broker timeout, instead of retrying it unseen.
func TestBrokerStartedReturnsNotFoundForAMissingQueue(t *testing.T) {
	url := testenv.Broker(t)
	const brokerTimeout = 5 * time.Second
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quietLogger()),
		rabbitmq.Options.BrokerTimeout(brokerTimeout))
	t.Cleanup(func() { _ = transport.Close() })
	queue := testenv.Name(t, "missing")
	consumer := New(transport, Options.Logger(quietLogger()), Options.Subscriptions(NewSubscription(queue,
		SubscriptionOptions.EstablishTopology(false),
		SubscriptionOptions.DeadLetters(false),
		SubscriptionOptions.AddWorkers(messaging.HandlerFunc(func(context.Context, ...any) {})),
	)))
	listened := make(chan struct{})
	go func() { defer close(listened); consumer.Listen() }()
	defer func() {
		_ = consumer.Close()
		<-listened
	}()

	ctx, cancel := context.WithTimeout(context.Background(), brokerTimeout)
	defer cancel()
	began := time.Now()
	err := consumer.Started(ctx)
	if !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("Started returned %v after %s; want the broker's not-found error (messaging.ErrNotFound)", err, time.Since(began))
	}
	t.Logf("Started returned in %s: %v", time.Since(began).Round(time.Millisecond), err)
}
