package memory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestWriterFixture(t *testing.T) {
	gunit.Run(new(WriterFixture), t)
}

type WriterFixture struct {
	*gunit.Fixture
	*world
	conn messaging.Connection
}

func (f *WriterFixture) Setup() {
	f.world = newWorld(f.Fixture)
	f.conn = f.connect()
	f.queue("q")
	f.So(f.broker.DeclareExchange("events", KindTopic, true), should.BeNil)
}
func (f *WriterFixture) Teardown() { f.world.close() }

func (f *WriterFixture) writer() messaging.Writer {
	w, err := f.conn.Writer(f.ctx)
	f.So(err, should.BeNil)
	return w
}

func (f *WriterFixture) commitWriter() messaging.CommitWriter {
	w, err := f.conn.CommitWriter(f.ctx)
	f.So(err, should.BeNil)
	return w
}

func (f *WriterFixture) TestWritePublishesEveryDispatchAtOnce() {
	n, err := f.writer().Write(f.ctx, ctxDispatch("", "q"), ctxDispatch("", "q"))
	f.So(n, should.Equal, 2)
	f.So(err, should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 2)
}

func (f *WriterFixture) TestWriteAccountsForEachMessageWhenSomeDoNotLand() {
	lost := messaging.Dispatch{Topic: "events", RoutingKey: "nobody", MessageID: "lost", Mandatory: true}
	n, err := f.writer().Write(f.ctx, ctxDispatch("", "q"), lost, ctxDispatch("", "q"))

	f.So(n, should.Equal, 2)
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	var published *messaging.PublishError
	f.So(errors.As(err, &published), should.BeTrue)
	f.So(len(published.Results), should.Equal, 3)
	f.So(published.Results[0].Confirmed && published.Results[0].Routed && published.Results[0].Err == nil, should.BeTrue)
	f.So(published.Results[1].MessageID, should.Equal, "lost")
	f.So(published.Results[1].Confirmed, should.BeTrue)
	f.So(published.Results[1].Routed, should.BeFalse)
	f.So(published.Failed(), should.HaveLength, 1)
	f.So(f.broker.MessageCount("q"), should.Equal, 2)
}

func (f *WriterFixture) TestAnUndeclaredExchangeClosesTheWritersChannel() {
	w := f.writer()
	n, err := w.Write(f.ctx, ctxDispatch("missing", "k"), ctxDispatch("", "q"))
	f.So(n, should.Equal, 0)
	f.So(err, should.Wrap, messaging.ErrNotFound)
	var published *messaging.PublishError
	f.So(errors.As(err, &published), should.BeTrue)
	f.So(published.Results[1].Err, should.Wrap, messaging.ErrClosed)

	_, err = w.Write(f.ctx, ctxDispatch("", "q"))
	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(f.broker.MessageCount("q"), should.Equal, 0)
}

func (f *WriterFixture) TestAClosedWriterOrConnectionRefusesWrites() {
	w := f.writer()
	f.So(w.Close(), should.BeNil)
	_, err := w.Write(f.ctx, ctxDispatch("", "q"))
	f.So(err, should.Wrap, messaging.ErrClosed)

	other := f.writer()
	f.So(f.conn.Close(), should.BeNil)
	_, err = other.Write(f.ctx, ctxDispatch("", "q"))
	f.So(err, should.Wrap, messaging.ErrClosed)
	_, err = f.conn.Writer(f.ctx)
	f.So(err, should.Wrap, messaging.ErrClosed)
}

func (f *WriterFixture) TestACommitWriterPublishesOnlyOnCommit() {
	w := f.commitWriter()
	n, err := w.Write(f.ctx, ctxDispatch("", "q"), ctxDispatch("", "q"))
	f.So(n, should.Equal, 2)
	f.So(err, should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 0)

	f.So(w.Commit(), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 2)
	f.So(w.Commit(), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 2)
}

func (f *WriterFixture) TestRollbackAndCloseForgetUncommittedWrites() {
	w := f.commitWriter()
	_, _ = w.Write(f.ctx, ctxDispatch("", "q"))
	f.So(w.Rollback(), should.BeNil)
	f.So(w.Commit(), should.BeNil)
	_, _ = w.Write(f.ctx, ctxDispatch("", "q"))
	f.So(w.Close(), should.BeNil)
	f.So(w.Commit(), should.Wrap, messaging.ErrClosed)
	f.So(f.broker.MessageCount("q"), should.Equal, 0)
}

func (f *WriterFixture) TestACommitWriterSnapshotsWhatItWasGiven() {
	w := f.commitWriter()
	headers := map[string]any{"k": "before"}
	payload := []byte("before")
	_, _ = w.Write(f.ctx, messaging.Dispatch{RoutingKey: "q", Headers: headers, Payload: payload})
	headers["k"] = "after"
	copy(payload, "AFTER!")
	f.So(w.Commit(), should.BeNil)

	d, _ := f.broker.Pull("q")
	f.So(d.Headers["k"], should.Equal, "before")
	f.So(string(d.Payload), should.Equal, "before")
}

func (f *WriterFixture) TestAnUndeclaredExchangeInACommitFailsItAndWhatFollows() {
	w := f.commitWriter()
	_, _ = w.Write(f.ctx, ctxDispatch("", "q"), ctxDispatch("missing", "k"), ctxDispatch("", "q"))
	err := w.Commit()
	f.So(err, should.Wrap, messaging.ErrNotFound)
	var published *messaging.PublishError
	f.So(errors.As(err, &published), should.BeTrue)
	f.So(published.Failed(), should.HaveLength, 2)
	f.So(f.broker.MessageCount("q"), should.Equal, 1)
	_, err = w.Write(f.ctx, ctxDispatch("", "q"))
	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(w.Commit(), should.Wrap, messaging.ErrClosed)
}

func (f *WriterFixture) TestACommitReportsUnroutableMandatoryMessages() {
	w := f.commitWriter()
	_, _ = w.Write(f.ctx, ctxDispatch("", "q"), messaging.Dispatch{Topic: "events", RoutingKey: "nobody", Mandatory: true})
	err := w.Commit()
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(f.broker.MessageCount("q"), should.Equal, 1)
}

func (f *WriterFixture) TestAReservedHeaderRefusesThatDispatchAlone() {
	bad := messaging.Dispatch{RoutingKey: "q", Headers: map[string]any{"x-acemq-attempt": 9}}
	n, err := f.writer().Write(f.ctx, ctxDispatch("", "q"), bad)
	f.So(n, should.Equal, 1)
	f.So(err, errorContains, "dispatch 2 of 2 was not published (the others were)")
	f.So(err, errorContains, `header "x-acemq-attempt" is in the reserved "x-acemq-" namespace`)

	w := f.commitWriter()
	n, err = w.Write(f.ctx, bad, ctxDispatch("", "q"))
	f.So(n, should.Equal, 2)
	f.So(err, should.BeNil)
	err = w.Commit()
	var publishErr *messaging.PublishError
	f.So(errors.As(err, &publishErr), should.BeTrue)
	f.So(publishErr.Failed(), should.HaveLength, 1)
	f.So(publishErr.Results[0].Err, errorContains, "reserved")
	f.So(f.broker.MessageCount("q"), should.Equal, 2)
}

func (f *WriterFixture) TestAFieldOverItsWireLimitRefusesThatDispatchAlone() {
	long := strings.Repeat("€", 100) // 300 bytes
	for _, bad := range []messaging.Dispatch{
		{RoutingKey: "q", MessageID: long},
		{RoutingKey: "q", CorrelationID: long},
		{RoutingKey: "q", ContentType: long},
		{RoutingKey: "q", MessageType: long},
		{RoutingKey: "q", Headers: map[string]any{long: "v"}},
		{RoutingKey: "q", Headers: map[string]any{"x-mine": struct{}{}}},
		{RoutingKey: long},
	} {
		n, err := f.writer().Write(f.ctx, ctxDispatch("", "q"), bad, ctxDispatch("", "q"))
		f.So(n, should.Equal, 2)
		f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
		var publishErr *messaging.PublishError
		f.So(errors.As(err, &publishErr), should.BeTrue)
		f.So(publishErr.Failed(), should.HaveLength, 1)
		var field *messaging.FieldError
		f.So(errors.As(publishErr.Results[1].Err, &field), should.BeTrue)
	}
	f.So(f.broker.MessageCount("q"), should.Equal, 14)
}

func (f *WriterFixture) TestAPayloadOverTheConfiguredMaximumIsRefused() {
	broker := New(Options.MaxMessageSize(4))
	conn, _ := broker.Connect(f.ctx)
	w, _ := conn.Writer(f.ctx)
	n, err := w.Write(f.ctx, messaging.Dispatch{MessageID: "big", Payload: []byte("12345")})
	f.So(n, should.Equal, 0)
	var field *messaging.FieldError
	f.So(errors.As(err, &field), should.BeTrue)
	f.So(*field, should.Resemble, messaging.FieldError{MessageID: "big", Field: "Payload", Size: 5, Limit: 4})
}

func (f *WriterFixture) TestAWriteWhoseContextEndedPublishesNothing() {
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	n, err := f.writer().Write(ctx, ctxDispatch("", "q"))
	f.So(n, should.Equal, 0)
	f.So(err, should.Equal, context.Canceled)
	f.So(f.broker.MessageCount("q"), should.Equal, 0)
}
