package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestMiddlewareFixture(t *testing.T) {
	gunit.Run(new(MiddlewareFixture), t)
}

type MiddlewareFixture struct {
	*gunit.Fixture
	settler *fakeSettler
	monitor *fakeMonitor
	lines   []string
}

func (f *MiddlewareFixture) Setup() {
	f.settler = newFakeSettler()
	f.monitor = &fakeMonitor{}
}

func (f *MiddlewareFixture) printf(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

// inBubble runs test on synctest's clock, so a timeout passes at once.
func (f *MiddlewareFixture) inBubble(test func()) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) { test() })
}

func (f *MiddlewareFixture) TestAHandlerThatOutlivesTheTimeoutIsRetriedWhateverItSaid() {
	var recovered any
	var took time.Duration
	f.inBubble(func() {
		slow := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			<-ctx.Done() // a cooperative handler: stops when cancelled
		})
		began := time.Now()
		recovered = handle(Timeout(10*time.Second, Options.Monitor(f.monitor))(slow), f.settler, batch(2))
		took = time.Since(began)
	})
	f.So(recovered, should.BeNil)
	f.So(took, should.Equal, 10*time.Second)
	f.So(f.settler.verdict("m0"), should.Equal, messaging.Retried)
	f.So(f.settler.verdict("m1"), should.Equal, messaging.Retried)
	f.So(f.settler.reason("m0"), should.Equal, "acemq: handling message m0 did not finish within 10s: middleware: the handler ran past its deadline and was cancelled")
	decision, _ := f.settler.Decided(messaging.Delivery{MessageID: "m0"})
	f.So(errors.Is(decision.Reason, ErrHandlerTimeout), should.BeTrue)
	f.So(messaging.IsOutage(decision.Reason), should.BeFalse) // it spends an attempt
	f.So(f.monitor.timedOut, should.Equal, 2)
}

func (f *MiddlewareFixture) TestAPanicAfterTheDeadlineIsARetryToo() {
	var recovered any
	f.inBubble(func() {
		late := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			time.Sleep(2 * time.Second) // the bubble's clock: past the deadline, at once
			panic("gave up")
		})
		recovered = handle(Timeout(time.Second)(late), f.settler, batch(1))
	})
	f.So(recovered, should.BeNil)
	f.So(f.settler.verdict("m0"), should.Equal, messaging.Retried)
}

func (f *MiddlewareFixture) TestAHandlerWithinItsTimeIsLeftAlone() {
	var recovered any
	f.inBubble(func() {
		quick := messaging.HandlerFunc(func(ctx context.Context, _ ...any) { time.Sleep(time.Second) }) // the bubble's clock
		recovered = handle(Timeout(2*time.Second)(quick), f.settler, batch(1))
	})
	f.So(recovered, should.BeNil)
	_, decided := f.settler.Decided(messaging.Delivery{MessageID: "m0"})
	f.So(decided, should.BeFalse)
	f.So(handle(Timeout(time.Second)(messaging.HandlerFunc(func(context.Context, ...any) { panic("early") })), f.settler, batch(1)), should.Equal, "early")
}

func (f *MiddlewareFixture) TestASettlementTheHandlerMadeStands() {
	f.inBubble(func() {
		rejects := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			_ = messaging.Reject(ctx, messaging.DeliveriesFrom(ctx)[0], errors.New("bad"))
			<-ctx.Done()
		})
		handle(Timeout(time.Second)(rejects), f.settler, batch(2))
	})
	f.So(f.settler.verdict("m0"), should.Equal, messaging.Rejected)
	f.So(f.settler.verdict("m1"), should.Equal, messaging.Retried)
}

func (f *MiddlewareFixture) TestACancelledParentIsNotATimeout() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	handler := Timeout(time.Second)(messaging.HandlerFunc(func(ctx context.Context, _ ...any) { <-ctx.Done() }))
	handler.Handle(messaging.WithSettler(messaging.WithDeliveries(ctx, batch(1)), f.settler), "m0")
	_, decided := f.settler.Decided(messaging.Delivery{MessageID: "m0"})
	f.So(decided, should.BeFalse)
}

func (f *MiddlewareFixture) TestATimeoutWithoutASettlerPanicsSoNothingIsAcknowledged() {
	var recovered any
	f.inBubble(func() {
		recovered = handle(Timeout(time.Second)(messaging.HandlerFunc(func(ctx context.Context, _ ...any) { <-ctx.Done() })), nil, batch(1))
	})
	err, _ := recovered.(error)
	f.So(errors.Is(err, ErrHandlerTimeout), should.BeTrue)
}

func (f *MiddlewareFixture) TestRecoveryRejectsAPanicAsFatal() {
	panics := messaging.HandlerFunc(func(context.Context, ...any) { panic("boom") })
	recovered := handle(Recovery(Options.Monitor(f.monitor))(panics), f.settler, batch(1))
	f.So(recovered, should.BeNil)
	f.So(f.settler.verdict("m0"), should.Equal, messaging.Rejected)
	f.So(f.settler.reason("m0"), should.Equal, "acemq: the handler panicked on message m0: boom")
	decision, _ := f.settler.Decided(messaging.Delivery{MessageID: "m0"})
	f.So(messaging.IsFatal(decision.Reason), should.BeTrue)
	f.So(f.monitor.recovered, should.Equal, 1)
}

func (f *MiddlewareFixture) TestRecoveryLetsAnOutageAndABatchGoOn() {
	outage := messaging.Outage(errors.New("database unreachable"))
	f.So(handle(Recovery()(messaging.HandlerFunc(func(context.Context, ...any) { panic(outage) })), f.settler, batch(1)), should.Equal, outage)
	f.So(handle(Recovery()(messaging.HandlerFunc(func(context.Context, ...any) { panic("one of them") })), f.settler, batch(2)), should.Equal, "one of them")
	f.So(f.settler.decisions, should.BeEmpty)
}

func (f *MiddlewareFixture) TestRecoveryPanicsWhenTheRejectionFails() {
	f.settler.fail = errors.New("broker away")
	recovered := handle(Recovery()(messaging.HandlerFunc(func(context.Context, ...any) { panic("boom") })), f.settler, batch(1))
	f.So(recovered, should.Equal, f.settler.fail)
}

func (f *MiddlewareFixture) TestLoggingWritesOneLinePerDeliveryWithWhatWasDecided() {
	f.inBubble(func() {
		mixed := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			time.Sleep(1500 * time.Millisecond) // the bubble's clock: the logged took=1.5s, exactly
			_ = messaging.Park(ctx, messaging.DeliveriesFrom(ctx)[1], errors.New("not now"))
		})
		handle(Logging(f.printf)(mixed), f.settler, batch(2))
	})
	f.So(f.lines, should.Equal, []string{
		"acemq m0 type=order.placed attempt=2 took=1.5s accepted",
		"acemq m1 type=order.placed attempt=2 took=1.5s parked: not now",
	})
}

func (f *MiddlewareFixture) TestLoggingRecordsWhatTheOthersDecidedInTheSeedsOrder() {
	var recovered any
	f.inBubble(func() {
		chain := messaging.Chain(Logging(f.printf), Recovery(), Timeout(time.Second))
		recovered = handle(chain(messaging.HandlerFunc(func(ctx context.Context, _ ...any) { <-ctx.Done() })), f.settler, batch(1))
		recovered = handle(chain(messaging.HandlerFunc(func(context.Context, ...any) { panic("boom") })), f.settler, []messaging.Delivery{{MessageID: "p1", MessageType: "t"}})
	})
	f.So(recovered, should.BeNil)
	f.So(f.lines, should.Equal, []string{
		"acemq m0 type=order.placed attempt=2 took=1s retried: acemq: handling message m0 did not finish within 1s: middleware: the handler ran past its deadline and was cancelled",
		"acemq p1 type=t attempt=1 took=0s rejected: acemq: the handler panicked on message p1: boom",
	})
}

func (f *MiddlewareFixture) TestLoggingLetsAPanicGoOn() {
	var recovered any
	f.inBubble(func() {
		recovered = handle(Logging(f.printf)(messaging.HandlerFunc(func(context.Context, ...any) { panic("boom") })), f.settler, batch(1))
	})
	f.So(recovered, should.Equal, "boom")
	f.So(f.lines, should.Equal, []string{"acemq m0 type=order.placed attempt=2 took=0s panicked: boom"})
}

func (f *MiddlewareFixture) TestLoggingWithoutPrintfWritesOneConstantMessageWithTheValuesAsAttributes() {
	var logged bytes.Buffer
	logger := Options.Logger(slog.New(slog.NewTextHandler(&logged, nil)))
	f.inBubble(func() {
		mixed := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			time.Sleep(1500 * time.Millisecond) // the bubble's clock
			_ = messaging.Park(ctx, messaging.DeliveriesFrom(ctx)[1], errors.New("not now"))
		})
		handle(Logging(nil, logger)(mixed), f.settler, batch(2))
		handle(Logging(nil, logger)(messaging.HandlerFunc(func(context.Context, ...any) { panic("boom") })), f.settler, batch(1))
	})
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	f.So(len(lines), should.Equal, 3)
	for i, want := range []string{
		`level=INFO msg="Delivery handled" queue=orders message_id=m0 message_type=order.placed attempt=2 took=1.5s outcome=accepted`,
		`level=INFO msg="Delivery handled" queue=orders message_id=m1 message_type=order.placed attempt=2 took=1.5s outcome=parked reason="not now"`,
		`level=INFO msg="Delivery handled" queue=orders message_id=m0 message_type=order.placed attempt=2 took=0s outcome=panicked reason=boom`,
	} {
		f.So(lines[i], should.EndWith, want) // after the time
	}
}
