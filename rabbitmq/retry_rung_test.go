package rabbitmq

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestRetryRungFixture(t *testing.T) {
	gunit.Run(new(RetryRungFixture), t)
}

// retryRungDeclarer is the structural interface the deadletter package asserts
// on a messaging.Connection.
type retryRungDeclarer interface {
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}

type RetryRungFixture struct {
	*gunit.Fixture
	h         *harness
	connector messaging.Connector
	raw       *fakeConnection
	declarer  retryRungDeclarer
}

func (f *RetryRungFixture) Setup() {
	f.h = newHarness()
	f.connector = New(f.h.options()...)
	conn, err := f.connector.Connect(context.Background())
	f.So(err, should.BeNil)
	f.raw = f.h.dialer.last()
	var ok bool
	f.declarer, ok = conn.(retryRungDeclarer)
	f.So(ok, should.BeTrue)
}

func (f *RetryRungFixture) Teardown() {
	_ = f.connector.Close()
}

func (f *RetryRungFixture) prepare(prepare func(*fakeChannel)) {
	f.raw.mu.Lock()
	defer f.raw.mu.Unlock()
	f.raw.prepare = prepare
}

func (f *RetryRungFixture) TestTheRungIsDeclaredExactlyOnAChannelOfItsOwnThenTheChannelIsClosed() {
	err := f.declarer.DeclareRetryRung(context.Background(), "orders", "orders.retry.2s", 2*time.Second)

	f.So(err, should.BeNil)
	ch := receive(f.T(), f.raw.opened, "the rung's channel")
	f.So(ch.Calls(), should.Resemble, []fakeCall{
		{method: "ExchangeDeclare", args: []any{"acemq.retry", "direct", true, false, false, amqp.Table(nil)}},
		{method: "QueueBind", args: []any{"orders", "orders", "acemq.retry"}},
		{method: "QueueDeclare", args: []any{"orders.retry.2s", true, false, false, amqp.Table{
			"x-message-ttl":             int64(2000),
			"x-dead-letter-exchange":    "acemq.retry",
			"x-dead-letter-routing-key": "orders",
		}}},
		{method: "Close"},
	})
}

func (f *RetryRungFixture) TestAFailedStepIsNamedAndTheChannelIsStillClosed() {
	f.prepare(func(ch *fakeChannel) { ch.Fail("QueueBind", errTest) })

	err := f.declarer.DeclareRetryRung(context.Background(), "orders", "orders.retry.1s", time.Second)

	f.So(errors.Is(err, errTest), should.BeTrue)
	f.So(err.Error(), should.StartWith, `declare retry rung "orders.retry.1s" for queue "orders": bind queue "orders" to exchange "acemq.retry": `)
	ch := receive(f.T(), f.raw.opened, "the rung's channel")
	calls := ch.Calls()
	f.So(calls[len(calls)-1].method, should.Equal, "Close")
	f.So(len(calls), should.Equal, 3) // exchange, bind, close: no rung without its binding
}

func (f *RetryRungFixture) TestAStalledDeclarationSeversAtTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.prepare(func(ch *fakeChannel) { ch.Block("QueueDeclare") })
		started := time.Now()

		err := f.declarer.DeclareRetryRung(context.Background(), "orders", "orders.retry.1s", time.Second)

		ch := receive(f.T(), f.raw.opened, "the rung's channel")
		f.So(f.called(ch, "QueueDeclare"), should.BeTrue)
		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrConnectTimeout), should.BeTrue)
		f.So(f.raw.isSevered(), should.BeTrue)
	})
}

func (f *RetryRungFixture) called(ch *fakeChannel, method string) bool {
	for _, c := range ch.Calls() {
		if c.method == method {
			return true
		}
	}
	return false
}

func (f *RetryRungFixture) TestNonsenseArgumentsAreRefusedBeforeAnythingIsSent() {
	ctx := context.Background()
	for _, err := range []error{
		f.declarer.DeclareRetryRung(ctx, "", "rung", time.Second),
		f.declarer.DeclareRetryRung(ctx, "orders", "", time.Second),
		f.declarer.DeclareRetryRung(ctx, "orders", "orders", time.Second),
		f.declarer.DeclareRetryRung(ctx, "orders", "rung", 0),
		f.declarer.DeclareRetryRung(ctx, "orders", "rung", time.Microsecond),
	} {
		f.So(err, should.NotBeNil)
	}
	f.So(len(f.raw.opened), should.Equal, 0)
}

func (f *RetryRungFixture) TestARungWhoseNameDoesNotSayItsTTLIsRefusedBeforeAnythingIsSent() {
	ctx := context.Background()
	for _, c := range []struct {
		rung string
		ttl  time.Duration
		says string
	}{
		{"orders.retry.30s", 30500 * time.Millisecond, "not a whole number of seconds"},
		{"orders.retry.1s", 1500 * time.Millisecond, "not a whole number of seconds"},
		{"orders.retry.30s", 31 * time.Second, `must be named "orders.retry.31s"`},
		{"orders.retry.60s", time.Minute, `must be named "orders.retry.1m"`},
		{"billing.retry.1s", time.Second, `must be named "orders.retry.1s"`},
	} {
		err := f.declarer.DeclareRetryRung(ctx, "orders", c.rung, c.ttl)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, c.says)
	}
	f.So(len(f.raw.opened), should.Equal, 0)
}

func (f *RetryRungFixture) TestOnAClosedConnectionItIsErrClosed() {
	f.raw.BrokerClose("CONNECTION_FORCED")
	f.h.monitor.await(f.T(), "closed")

	err := f.declarer.DeclareRetryRung(context.Background(), "orders", "orders.retry.1s", time.Second)

	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}
