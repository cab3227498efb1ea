package rabbitmq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// closedOperation is one call a test makes on a connection the broker closed.
type closedOperation struct {
	name string
	call func(ctx context.Context) error
}

// opened is everything a connection had open when the broker closed it.
type opened struct {
	conn         messaging.Connection
	reader       messaging.Reader // its spare channel taken by stream
	spare        messaging.Reader // its spare channel unused
	stream       messaging.Stream
	poll         messaging.Stream
	writer       messaging.Writer
	commit       messaging.CommitWriter
	empty        messaging.CommitWriter // nothing buffered
	declarer     messaging.Declarer
	acknowledged messaging.Delivery // read, to acknowledge after the close
	requeued     messaging.Delivery // read, to requeue after the close
}

// openEverything opens a connection with a reader, two streams, writers and
// a declarer, reads two deliveries and buffers one commit.
func openEverything(t *testing.T, ctx context.Context, url, queue string) opened {
	t.Helper()
	connector := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(10*time.Second))
	t.Cleanup(func() { _ = connector.Close() })
	var o opened
	var err error
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	o.conn, err = connector.Connect(ctx)
	must("connect", err)
	o.reader, err = o.conn.Reader(ctx)
	must("open reader", err)
	o.spare, err = o.conn.Reader(ctx)
	must("open a second reader", err)
	o.writer, err = o.conn.Writer(ctx)
	must("open writer", err)
	o.commit, err = o.conn.CommitWriter(ctx)
	must("open commit writer", err)
	o.empty, err = o.conn.CommitWriter(ctx)
	must("open a second commit writer", err)
	declarer, ok := messaging.As[messaging.Declarer](o.conn)
	if !ok {
		t.Fatalf("the connection %T declares nothing", o.conn)
	}
	o.declarer = declarer
	for _, payload := range []string{"ack", "requeue", "poll"} {
		_, err := o.writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Payload: []byte(payload), Mandatory: true})
		must("publish "+payload, err)
	}
	o.stream, err = o.reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, BufferCapacity: 2})
	must("open stream", err)
	must("read", o.stream.Read(ctx, &o.acknowledged))
	must("read", o.stream.Read(ctx, &o.requeued))
	o.poll, err = o.reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, Poll: true})
	must("open a polling stream", err)
	_, err = o.commit.Write(ctx, messaging.Dispatch{RoutingKey: queue, Payload: []byte("commit"), Mandatory: true})
	must("buffer a commit", err)
	return o
}

// operations are the calls of every kind the transport offers, each on
// something that was open when the broker closed its connection.
func (o opened) operations(queue string) []closedOperation {
	d := o.declarer
	dispatch := messaging.Dispatch{RoutingKey: queue, Payload: []byte("after"), Mandatory: true}
	write := func(w messaging.Writer) func(context.Context) error {
		return func(ctx context.Context) error { _, err := w.Write(ctx, dispatch); return err }
	}
	opens := func(open func(context.Context) (any, error)) func(context.Context) error {
		return func(ctx context.Context) error { _, err := open(ctx); return err }
	}
	config := messaging.StreamConfig{StreamName: queue}
	return []closedOperation{
		{"Connection.Reader", opens(func(ctx context.Context) (any, error) { return o.conn.Reader(ctx) })},
		{"Connection.Writer", opens(func(ctx context.Context) (any, error) { return o.conn.Writer(ctx) })},
		{"Connection.CommitWriter", opens(func(ctx context.Context) (any, error) { return o.conn.CommitWriter(ctx) })},
		{"Reader.Stream (a new channel)", opens(func(ctx context.Context) (any, error) { return o.reader.Stream(ctx, config) })},
		{"Reader.Stream (the reader's own channel)", opens(func(ctx context.Context) (any, error) { return o.spare.Stream(ctx, config) })},
		{"Stream.Read", func(ctx context.Context) error { var d messaging.Delivery; return o.stream.Read(ctx, &d) }},
		{"Stream.Acknowledge", func(ctx context.Context) error { return o.stream.Acknowledge(ctx, o.acknowledged) }},
		{"Stream.Requeue", func(ctx context.Context) error {
			requeuer, _ := messaging.As[messaging.Requeuer](o.stream)
			return requeuer.Requeue(ctx, o.requeued)
		}},
		{"Stream.Read (polling)", func(ctx context.Context) error { var d messaging.Delivery; return o.poll.Read(ctx, &d) }},
		{"Writer.Write", write(o.writer)},
		{"CommitWriter.Commit", func(context.Context) error { return o.commit.Commit() }},
		{"CommitWriter.Write", write(o.commit)},
		{"CommitWriter.Commit (nothing buffered)", func(context.Context) error { return o.empty.Commit() }},
		{"DeclareExchange", func(ctx context.Context) error {
			return d.DeclareExchange(ctx, messaging.Exchange{Name: queue + ".x", Kind: messaging.ExchangeFanout})
		}},
		{"DeclareQueue", func(ctx context.Context) error { return d.DeclareQueue(ctx, messaging.Queue{Name: queue + ".q"}) }},
		{"Bind", func(ctx context.Context) error {
			return d.Bind(ctx, messaging.Binding{Exchange: "amq.fanout", Queue: queue})
		}},
		{"DeleteQueue", func(ctx context.Context) error { return d.DeleteQueue(ctx, queue+".q") }},
		{"DeleteExchange", func(ctx context.Context) error { return d.DeleteExchange(ctx, queue+".x") }},
		{"InspectQueue", func(ctx context.Context) error { _, err := d.InspectQueue(ctx, queue); return err }},
		{"InspectExchange", func(ctx context.Context) error { return d.InspectExchange(ctx, "amq.fanout") }},
		{"DeclareRetryRung", func(ctx context.Context) error {
			rungs, ok := o.conn.(interface {
				DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
			})
			if !ok {
				return errors.New("the connection declares no retry rungs")
			}
			return rungs.DeclareRetryRung(ctx, queue, queue+".retry.1s", time.Second)
		}},
	}
}

// Every operation that fails because the broker closed its connection says
// so from its first failure on: its error matches messaging.ErrClosed (or,
// for a write whose messages may have arrived, messaging.ErrArrivalUnknown),
// so every caller treats it as a lost connection, not as a verdict on its
// messages. Each is called right after rabbitmqctl closed the connection; one
// that still succeeds (the close had not reached the client yet) is called
// again until it fails.
func TestEveryOperationFailsClosedFromItsFirstFailureAfterTheBrokerClosedTheConnection(t *testing.T) {
	url := testenv.Disrupt(t)
	b := newBroker(t, url)
	queue := b.queue("closed")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := openEverything(t, ctx, url, queue)
	operations := o.operations(queue)

	testenv.Rabbitmqctl(t, "close_all_connections", "test: every operation after a close")

	matched := 0
	for _, op := range operations {
		err := firstFailure(ctx, op)
		switch {
		case err == nil:
			t.Errorf("%s never failed on the closed connection", op.name)
		case (errors.Is(err, messaging.ErrClosed) || errors.Is(err, messaging.ErrArrivalUnknown)) && messaging.IsConnectionLost(err):
			matched++
		default:
			t.Errorf("%s first failed with %v (%T); want an error matching messaging.ErrClosed or messaging.ErrArrivalUnknown", op.name, err, err)
		}
	}
	if rollback := o.commit.Rollback(); rollback != nil {
		t.Errorf("Rollback on the closed connection = %v; want nil (nothing was sent, so there is nothing to undo)", rollback)
	}
	t.Logf("%d of %d first failures matched messaging.ErrClosed or messaging.ErrArrivalUnknown", matched, len(operations))
}

// firstFailure calls op until it fails, within a bound a busy machine meets,
// and returns its first error; nil when it never failed.
func firstFailure(ctx context.Context, op closedOperation) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op.call(callCtx)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}
