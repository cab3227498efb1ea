package rabbitmq

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

// The tests below call every operation in the window after the connection
// closed and before its close notification reached the transport, where
// amqp091 answers every call with "channel/connection is not open" or with
// the socket's error: each must fail matching messaging.ErrClosed already.

func (f *ConnectorFixture) TestEveryOperationFailsClosedWhenTheClientSaysNotOpen() {
	f.assertEveryOperationFailsClosed(amqp.ErrClosed)
}

func (f *ConnectorFixture) TestEveryOperationFailsClosedWhenTheSocketWasCut() {
	f.assertEveryOperationFailsClosed(&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE})
}

func (f *ConnectorFixture) assertEveryOperationFailsClosed(dropped error) {
	ctx := context.Background()
	connector := f.connector()
	defer func() { _ = connector.Close() }()
	conn, err := connector.Connect(ctx)
	f.So(err, should.BeNil)
	raw := f.h.dialer.last()
	operations := f.openEverything(ctx, raw, conn)

	raw.Drop(dropped)

	for _, op := range operations {
		err := op.call(ctx)
		f.So(err, should.NotBeNil)
		if !errors.Is(err, messaging.ErrClosed) || !messaging.IsConnectionLost(err) {
			f.Errorf("%s failed with an error that does not match messaging.ErrClosed: %v", op.name, err)
		}
	}
}

// open opens one of everything on conn and returns the calls to make on
// them once the connection is gone.
func (f *ConnectorFixture) openEverything(ctx context.Context, raw *fakeConnection, conn messaging.Connection) []closedCall {
	reader, err := conn.Reader(ctx)
	f.So(err, should.BeNil)
	channel := receive(f.T(), raw.opened, "the reader's channel")
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders", BufferCapacity: 2})
	f.So(err, should.BeNil)
	channel.Deliver(amqp.Delivery{DeliveryTag: 1})
	channel.Deliver(amqp.Delivery{DeliveryTag: 2})
	var first, second messaging.Delivery
	f.So(stream.Read(ctx, &first), should.BeNil)
	f.So(stream.Read(ctx, &second), should.BeNil)
	poll, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders", Poll: true})
	f.So(err, should.BeNil)
	spare, err := conn.Reader(ctx)
	f.So(err, should.BeNil)
	writer, err := conn.Writer(ctx)
	f.So(err, should.BeNil)
	commit, err := conn.CommitWriter(ctx)
	f.So(err, should.BeNil)
	_, err = commit.Write(ctx, messaging.Dispatch{RoutingKey: "orders", Payload: []byte("x")})
	f.So(err, should.BeNil)
	declarer, _ := messaging.As[messaging.Declarer](conn)
	requeuer, _ := messaging.As[messaging.Requeuer](stream)
	rungs := conn.(interface {
		DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
	})
	config := messaging.StreamConfig{StreamName: "orders"}
	return []closedCall{
		{"Connection.Reader", func(ctx context.Context) error { _, err := conn.Reader(ctx); return err }},
		{"Connection.Writer", func(ctx context.Context) error { _, err := conn.Writer(ctx); return err }},
		{"Connection.CommitWriter", func(ctx context.Context) error { _, err := conn.CommitWriter(ctx); return err }},
		{"Reader.Stream", func(ctx context.Context) error { _, err := reader.Stream(ctx, config); return err }},
		{"Reader.Stream (its own channel)", func(ctx context.Context) error { _, err := spare.Stream(ctx, config); return err }},
		{"Stream.Acknowledge", func(ctx context.Context) error { return stream.Acknowledge(ctx, first) }},
		{"Stream.Requeue", func(ctx context.Context) error { return requeuer.Requeue(ctx, second) }},
		{"Stream.Read (polling)", func(ctx context.Context) error { var d messaging.Delivery; return poll.Read(ctx, &d) }},
		{"Writer.Write", func(ctx context.Context) error {
			_, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: "orders"})
			return err
		}},
		{"CommitWriter.Commit", func(context.Context) error { return commit.Commit() }},
		{"DeclareExchange", func(ctx context.Context) error {
			return declarer.DeclareExchange(ctx, messaging.Exchange{Name: "x", Kind: messaging.ExchangeFanout})
		}},
		{"DeclareQueue", func(ctx context.Context) error { return declarer.DeclareQueue(ctx, messaging.Queue{Name: "q"}) }},
		{"Bind", func(ctx context.Context) error {
			return declarer.Bind(ctx, messaging.Binding{Exchange: "x", Queue: "q"})
		}},
		{"DeleteQueue", func(ctx context.Context) error { return declarer.DeleteQueue(ctx, "q") }},
		{"DeleteExchange", func(ctx context.Context) error { return declarer.DeleteExchange(ctx, "x") }},
		{"InspectQueue", func(ctx context.Context) error { _, err := declarer.InspectQueue(ctx, "q"); return err }},
		{"InspectExchange", func(ctx context.Context) error { return declarer.InspectExchange(ctx, "x") }},
		{"DeclareRetryRung", func(ctx context.Context) error { return rungs.DeclareRetryRung(ctx, "q", "q.retry.1s", time.Second) }},
	}
}

type closedCall struct {
	name string
	call func(ctx context.Context) error
}

// A virtual host the broker refused at connection.open without a reply
// (amqp091's ErrVhost) is a missing one: permanent, so a service exits on it
// at start and no other node of the cluster is tried.
func (f *ConnectorFixture) TestARefusedVirtualHostIsNotFoundAndPermanent() {
	f.h.dialer.err = amqp.ErrVhost
	connector := f.connector(Options.Addresses("amqp://a:5672/nope", "amqp://b:5672/nope"))
	defer func() { _ = connector.Close() }()

	_, err := connector.Connect(context.Background())

	f.So(err, should.Wrap, messaging.ErrNotFound)
	f.So(messaging.IsPermanent(err), should.BeTrue)
	var refused *messaging.BrokerError
	f.So(errors.As(err, &refused), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "refused access to the virtual host")
	f.So(len(f.h.dialer.addresses), should.Equal, 1) // the second node would only repeat it
}
