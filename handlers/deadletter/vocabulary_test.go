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

func TestVocabularyFixture(t *testing.T) {
	gunit.Run(new(VocabularyFixture), t)
}

// VocabularyFixture settles one delivery of a batch of ten through the root
// vocabulary (messaging.Accept, Reject, Park, Retry, InProgress), from a
// handler that gets decoded values and reads the envelopes from its context.
type VocabularyFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	monitor   *fakeMonitor
	// waited is how long the last Handle waited in the process, on the
	// synctest bubble's clock.
	waited  time.Duration
	batch   []messaging.Delivery
	results []error
	decided []string // what an outer decorator read, per delivery
}

func (f *VocabularyFixture) Setup() {
	f.connector = &fakeConnector{}
	f.monitor = &fakeMonitor{}
	for i := range 10 {
		d := delivery(fmt.Sprint("m", i))
		d.DeliveryID = uint64(i + 1)
		f.batch = append(f.batch, d)
	}
}

// handle runs the batch; the handler applies verb to the fourth message,
// and a decorator around it records what was decided for each.
func (f *VocabularyFixture) handle(verb func(ctx context.Context, d messaging.Delivery) error, options ...Option) any {
	handler := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		envelopes := messaging.DeliveriesFrom(ctx)
		for i, message := range messages {
			if message == "m3" {
				f.results = append(f.results, verb(ctx, envelopes[i]))
			}
		}
	})
	reader := func(next messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			next.Handle(ctx, messages...)
			for _, d := range messaging.DeliveriesFrom(ctx) {
				if decision, ok := messaging.DecisionOf(ctx, d); ok {
					f.decided = append(f.decided, fmt.Sprintf("%s %s %v", d.MessageID, decision.Verdict, decision.Reason))
				}
			}
		})
	}
	settlement := func(next messaging.Handler) messaging.Handler {
		return New(f.connector, next, append([]Option{Options.Monitor(f.monitor)}, options...)...)
	}
	stack := messaging.Chain(settlement, reader)(handler)
	messages := make([]any, len(f.batch))
	for i, d := range f.batch {
		messages[i] = d
	}
	var value any
	f.waited = elapsed(f.T().(*testing.T), func() {
		value = recovered(func() { stack.Handle(context.Background(), messages...) })
	})
	return value
}

func (f *VocabularyFixture) accepted() int {
	n := 0
	for _, event := range f.monitor.events {
		if event == "q accepted " {
			n++
		}
	}
	return n
}

func (f *VocabularyFixture) TestAccept() {
	f.So(f.handle(messaging.Accept), should.BeNil)
	f.So(f.results, should.Equal, []error{nil})
	f.So(f.connector.dispatches(), should.BeEmpty)
	f.So(f.decided, should.Equal, []string{"m3 accepted <nil>"})
	f.So(f.accepted(), should.Equal, 10) // once each, m3 included
}

func (f *VocabularyFixture) TestReject() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Reject(ctx, d, errors.New("nope"))
	})
	f.So(f.results, should.Equal, []error{nil})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq m3: the handler rejected it: nope"})
	f.So(f.decided, should.Equal, []string{"m3 rejected the handler rejected it: nope"})
	f.So(f.accepted(), should.Equal, 9)
}

func (f *VocabularyFixture) TestPark() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Park(ctx, d, errors.New("later"))
	})
	f.So(f.connector.targets(), should.Equal, []string{"q.parked m3: the handler parked it: later"})
	f.So(f.decided, should.Equal, []string{"m3 parked the handler parked it: later"})
	f.So(f.accepted(), should.Equal, 9)
}

func (f *VocabularyFixture) TestRetry() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("busy"))
	},
		Options.Policy(retrypolicy.Fixed(5, time.Second)))
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 1)
	f.So(dispatches[0].RoutingKey, should.Equal, "q")
	f.So(dispatches[0].MessageID, should.Equal, "m3")
	f.So(dispatches[0].Attempt, should.Equal, 2)
	f.So(f.waited, should.Equal, time.Second)
	f.So(f.decided, should.Equal, []string{"m3 retried <nil>"})
	f.So(f.accepted(), should.Equal, 9)
}

func (f *VocabularyFixture) TestRetryWithTheBudgetSpentReadsRejected() {
	f.batch[3].Attempt = 5
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("busy"))
	})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq m3: exhausted 5 attempts: busy"})
	f.So(f.decided, should.Equal, []string{"m3 rejected exhausted 5 attempts: busy"})
}

func (f *VocabularyFixture) TestInProgress() {
	f.batch[3].Attempt = 4
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, 3*time.Second)
	})
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 1)
	f.So(dispatches[0].RoutingKey, should.Equal, "q")
	f.So(dispatches[0].Attempt, should.Equal, 4) // not advanced
	f.So(f.waited, should.Equal, 3*time.Second)
	f.So(f.decided, should.Equal, []string{"m3 in_progress <nil>"})
	f.So(f.accepted(), should.Equal, 9)
}

func (f *VocabularyFixture) TestARefusedRetryIsParkedWithItsReason() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("busy"))
	},
		Options.RefuseRetry("a stream cannot take a message back"))
	f.So(f.connector.targets(), should.Equal, []string{"q.parked m3: this consumer does not retry (a stream cannot take a message back): busy"})
	f.So(f.decided, should.Equal, []string{"m3 parked this consumer does not retry (a stream cannot take a message back): busy"})
}

func (f *VocabularyFixture) TestARefusedInProgressIsParkedWithItsReason() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, time.Second)
	},
		Options.RefuseRetry("a stream"))
	f.So(f.connector.targets(), should.Equal, []string{"q.parked m3: this consumer does not hold messages in progress (a stream)"})
	f.So(f.waited, should.Equal, time.Duration(0))
}

func (f *VocabularyFixture) TestARetryableDecodeErrorIsRetriedAndAFatalOneParked() {
	f.batch[3].Message = nil
	f.batch[3].Undecodable = messaging.Retryable(errors.New("schema registry timed out"))
	f.batch[6].Message = nil
	f.batch[6].Undecodable = errors.New("not JSON")
	f.handle(func(context.Context, messaging.Delivery) error { return nil })
	dispatches := f.connector.dispatches()
	f.So(f.connector.targets(), should.Equal, []string{"q m3: ", "q.parked m6: could not be decoded: not JSON"})
	f.So(dispatches[0].Attempt, should.Equal, 2)
	f.So(f.accepted(), should.Equal, 8)
}

func (f *VocabularyFixture) TestARetryableDecodeErrorWithItsBudgetSpentIsDeadLettered() {
	f.batch[3].Undecodable = messaging.Retryable(errors.New("schema registry timed out"))
	f.batch[3].Attempt = 3
	f.handle(func(context.Context, messaging.Delivery) error { return nil }, Options.Policy(retrypolicy.Fixed(3, 0)))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq m3: exhausted 3 attempts: schema registry timed out"})
}

func (f *VocabularyFixture) TestWithoutASettlerTheVerbsSaySo() {
	d := f.batch[0]
	ctx := context.Background()
	for _, err := range []error{
		messaging.Accept(ctx, d), messaging.Reject(ctx, d, nil), messaging.Park(ctx, d, nil),
		messaging.Retry(ctx, d, nil), messaging.InProgress(ctx, d, time.Second),
	} {
		f.So(errors.Is(err, messaging.ErrNoSettler), should.BeTrue)
	}
	_, ok := messaging.DecisionOf(ctx, d)
	f.So(ok, should.BeFalse)
}
