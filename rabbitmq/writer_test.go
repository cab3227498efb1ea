package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

func TestWriterFixture(t *testing.T) {
	gunit.Run(new(WriterFixture), t)
}

type WriterFixture struct {
	*gunit.Fixture
	h         *harness
	connector messaging.Connector
	conn      messaging.Connection
	raw       *fakeConnection
	writer    messaging.Writer
	channel   *fakeChannel
}

type writeResult struct {
	n   int
	err error
}

func (f *WriterFixture) Setup() {
	f.h = newHarness()
	f.open(4)
}

func (f *WriterFixture) open(window int) {
	f.connector = New(f.h.options(Options.MaxOutstandingPublishes(window))...)
	f.conn, _ = f.connector.Connect(context.Background())
	f.raw = f.h.dialer.last()
	var err error
	f.writer, err = f.conn.Writer(context.Background())
	f.So(err, should.BeNil)
	f.channel = receive(f.T(), f.raw.opened, "the writer's channel")
}

func (f *WriterFixture) Teardown() {
	_ = f.connector.Close()
}

func (f *WriterFixture) write(ctx context.Context, dispatches ...messaging.Dispatch) chan writeResult {
	result := make(chan writeResult, 1)
	go func() {
		n, err := f.writer.Write(ctx, dispatches...)
		result <- writeResult{n: n, err: err}
	}()
	return result
}

func (f *WriterFixture) published() fakePublish {
	return receive(f.T(), f.channel.published, "a publish")
}

func (f *WriterFixture) TestTheChannelIsInConfirmMode() {
	f.So(f.channel.Calls()[0], should.Resemble, fakeCall{method: "Confirm", args: []any{false}})
}

func (f *WriterFixture) TestEveryMessageIsPublishedBeforeAnyConfirmIsAwaited() {
	result := f.write(context.Background(),
		messaging.Dispatch{RoutingKey: "a", MessageID: "1"},
		messaging.Dispatch{RoutingKey: "b", MessageID: "2"},
		messaging.Dispatch{RoutingKey: "c", MessageID: "3"},
	)
	for _, id := range []string{"1", "2", "3"} {
		f.So(f.published().msg.MessageId, should.Equal, id) // no confirm has been sent yet
	}

	f.channel.Answer(2, true)
	f.channel.Answer(1, true)
	f.channel.Answer(3, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 3)
	f.So(got.err, should.BeNil)
	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened", "published", "published", "published"})
}

func (f *WriterFixture) TestPublishesArePersistentAndMandatoryAsAsked() {
	before := time.Now().Truncate(time.Second)
	result := f.write(context.Background(),
		messaging.Dispatch{Topic: "events", RoutingKey: "k", Mandatory: true},
		messaging.Dispatch{Topic: "events", RoutingKey: "k", Transient: true},
	)
	first, second := f.published(), f.published()
	f.channel.Answer(1, true)
	f.channel.Answer(2, true)
	receive(f.T(), result, "Write")

	f.So(first.exchange, should.Equal, "events")
	f.So(first.key, should.Equal, "k")
	f.So(first.mandatory, should.BeTrue)
	f.So(first.msg.DeliveryMode, should.Equal, uint8(2))
	f.So(second.mandatory, should.BeFalse)
	f.So(second.msg.DeliveryMode, should.Equal, uint8(1))
	f.So(first.msg.Headers["x-acemq-origin"], should.Equal, "tests@host")
	f.So(first.msg.Timestamp.Before(before), should.BeFalse) // the write's time
	f.So(first.msg.Timestamp.After(time.Now()), should.BeFalse)
}

func (f *WriterFixture) TestAReturnIsMatchedToItsMessageByID() {
	result := f.write(context.Background(),
		messaging.Dispatch{Topic: "events", RoutingKey: "order.placed", MessageID: "routed", Mandatory: true},
		messaging.Dispatch{Topic: "events", RoutingKey: "order.placed", MessageID: "dropped", Mandatory: true},
		messaging.Dispatch{Topic: "events", RoutingKey: "order.placed", MessageID: "also-routed", Mandatory: true},
	)
	f.published()
	f.published()
	f.published()

	f.channel.Answer(1, true)
	f.channel.Return("dropped", "events", "order.placed")
	f.channel.Answer(2, true)
	f.channel.Answer(3, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 2)
	f.So(errors.Is(got.err, messaging.ErrUnroutable), should.BeTrue)
	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	f.So(publishErr.Results[0], should.Resemble, messaging.PublishResult{MessageID: "routed", Confirmed: true, Routed: true})
	f.So(publishErr.Results[1].Confirmed, should.BeTrue)
	f.So(publishErr.Results[1].Routed, should.BeFalse)
	f.So(publishErr.Results[1].Err.Error(), should.Equal,
		`message dropped to exchange "events" with key "order.placed" reached no queue (312 NO_ROUTE); the broker dropped it: messaging: message reached no queue`)
	f.So(publishErr.Results[2].Err, should.BeNil)
}

// A Verbatim copy whose id is too long for the message-id property travels
// with its id in its header only, and so does the broker's return of it.
func (f *WriterFixture) TestAnUnroutableCopyWhoseIDIsTooLongForThePropertyIsReportedUnroutable() {
	id := strings.Repeat("i", 300)
	result := f.write(context.Background(), messaging.Dispatch{RoutingKey: "nowhere", MessageID: id, Mandatory: true, Verbatim: true})
	published := f.published()
	f.So(published.msg.MessageId, should.BeEmpty)

	f.channel.ReturnPublished(published)
	f.channel.Answer(1, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, messaging.ErrUnroutable), should.BeTrue)
}

// A return the broker sent before nacking its message is that message's:
// it is discarded with the nack, not left for a later message of the same id
// and key to claim.
func (f *WriterFixture) TestANackDiscardsTheReturnThatCameBeforeIt() {
	dispatch := messaging.Dispatch{RoutingKey: "q", MessageID: "same", Mandatory: true}
	first := f.write(context.Background(), dispatch)
	f.published()
	f.channel.Return("same", "", "q")
	f.channel.Answer(1, false)
	f.So(errors.Is(receive(f.T(), first, "the first Write").err, messaging.ErrRefused), should.BeTrue)

	second := f.write(context.Background(), dispatch)
	f.published()
	f.channel.Answer(2, true)
	got := receive(f.T(), second, "the second Write")

	f.So(got.n, should.Equal, 1)
	f.So(got.err, should.BeNil)
}

func (f *WriterFixture) TestANackIsARefusal() {
	result := f.write(context.Background(), messaging.Dispatch{RoutingKey: "q", MessageID: "m"})
	f.published()

	f.channel.Answer(1, false)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, messaging.ErrRefused), should.BeTrue)
	f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeFalse)
}

func (f *WriterFixture) TestAConfirmLostWithTheChannelIsArrivalUnknownNotRefused() {
	result := f.write(context.Background(),
		messaging.Dispatch{RoutingKey: "q", MessageID: "confirmed"},
		messaging.Dispatch{RoutingKey: "q", MessageID: "lost"},
	)
	f.published()
	f.published()
	f.channel.Answer(1, true)

	f.channel.BrokerClose(404, "NOT_FOUND - no exchange 'x' in vhost '/'")
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 1)
	f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeTrue)
	f.So(errors.Is(got.err, messaging.ErrRefused), should.BeFalse)
	f.So(got.err.Error(), should.ContainSubstring, "NOT_FOUND - no exchange 'x'")

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{RoutingKey: "q"})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "open a new writer")
}

func (f *WriterFixture) TestAFullWindowWaitsForAConfirm() {
	_ = f.connector.Close()
	f.open(1)
	result := f.write(context.Background(), messaging.Dispatch{MessageID: "1"}, messaging.Dispatch{MessageID: "2"})
	f.published()
	select {
	case <-f.channel.published:
		f.Error("the second message was published while the window was full")
	default:
	}

	f.channel.Answer(1, true)
	f.So(f.published().msg.MessageId, should.Equal, "2")
	f.channel.Answer(2, true)

	f.So(receive(f.T(), result, "Write"), should.Resemble, writeResult{n: 2})
}

func (f *WriterFixture) TestAFullWindowFailsWhenTheContextEndsNamingTheSetting() {
	_ = f.connector.Close()
	f.open(1)
	ctx, cancel := context.WithCancel(context.Background())
	result := f.write(ctx, messaging.Dispatch{MessageID: "1"}, messaging.Dispatch{MessageID: "2"})
	f.published()

	cancel()
	got := receive(f.T(), result, "Write")

	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	f.So(errors.Is(publishErr.Results[0].Err, messaging.ErrArrivalUnknown), should.BeTrue)
	second := publishErr.Results[1].Err
	f.So(errors.Is(second, messaging.ErrTooManyOutstanding), should.BeTrue)
	f.So(errors.Is(second, context.Canceled), should.BeTrue)
	f.So(second.Error(), should.ContainSubstring, "1 publishes are already waiting for a confirm")
	f.So(second.Error(), should.ContainSubstring, "rabbitmq.Options.MaxOutstandingPublishes")
}

func (f *WriterFixture) TestAFullWindowWithNoConfirmWithinTheBrokerTimeoutSeversTheConnection() {
	inBubble(f.T(), f, f.Setup, f.Teardown, f.aFullWindowWithNoConfirmSevers)
}

func (f *WriterFixture) aFullWindowWithNoConfirmSevers() {
	_ = f.connector.Close()
	f.open(1)
	abandoned, cancel := context.WithCancel(context.Background())
	first := f.write(abandoned, messaging.Dispatch{MessageID: "1"})
	f.published()
	cancel() // the caller stops waiting; its slot stays taken until a confirm comes
	f.So(errors.Is((<-first).err, messaging.ErrArrivalUnknown), should.BeTrue)
	started := time.Now()

	got := <-f.write(context.Background(), messaging.Dispatch{MessageID: "2"})

	f.So(time.Since(started), should.Equal, DefaultBrokerTimeout) // the first write's bound was stopped
	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, ErrPublishTimeout), should.BeTrue)
	f.So(errors.Is(got.err, messaging.ErrTooManyOutstanding), should.BeFalse)
	f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeFalse)
	f.So(got.err.Error(), should.ContainSubstring, "the broker stopped confirming")
	f.So(f.raw.isSevered(), should.BeTrue)
	f.So(f.h.logs.String(), should.ContainSubstring, "AMQP publish did not complete within [30s]; severing the connection.")
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *WriterFixture) TestAFullWindowWhileTheBrokerStillConfirmsIsTooManyOutstandingWithoutSevering() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		_ = f.connector.Close()
		f.open(1)
		abandoned, cancel := context.WithCancel(context.Background())
		first := f.write(abandoned, messaging.Dispatch{MessageID: "1"})
		f.published()
		cancel()
		<-first

		second := f.write(context.Background(), messaging.Dispatch{MessageID: "2"})
		synctest.Wait()            // the second write waits for a slot
		f.channel.Answer(99, true) // a confirm that frees no slot this write can take
		synctest.Wait()            // the drainer has counted it
		got := <-second

		f.So(errors.Is(got.err, messaging.ErrTooManyOutstanding), should.BeTrue)
		f.So(errors.Is(got.err, ErrPublishTimeout), should.BeFalse)
		f.So(f.raw.isSevered(), should.BeFalse)
	})
}

func (f *WriterFixture) TestAConfirmNotArrivingWithinTheBrokerTimeoutSeversTheConnection() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		started := time.Now()

		got := <-f.write(context.Background(), messaging.Dispatch{MessageID: "1"})

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(len(f.channel.published), should.Equal, 1)
		f.So(errors.Is(got.err, ErrPublishTimeout), should.BeTrue)
		f.So(f.raw.isSevered(), should.BeTrue)
		f.So(f.h.logs.String(), should.ContainSubstring, "AMQP publish did not complete within [30s]; severing the connection.")
		f.h.monitor.await(f.T(), "closed")
	})
}

func (f *WriterFixture) TestAPublishStuckInTheSocketIsSeveredAtTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, f.Teardown, f.aPublishStuckInTheSocketIsSevered)
}

func (f *WriterFixture) aPublishStuckInTheSocketIsSevered() {
	f.channel.Block("Publish")
	started := time.Now()

	got := <-f.write(context.Background(), messaging.Dispatch{MessageID: "1"})

	f.So(time.Since(started), should.Equal, DefaultBrokerTimeout) // one bound for the write and its publishes
	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, ErrPublishTimeout), should.BeTrue)
	f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeFalse)
	f.So(f.raw.isSevered(), should.BeTrue)
	f.So(f.h.logs.String(), should.ContainSubstring, "AMQP publish did not complete within [30s]; severing the connection.")
}

func (f *WriterFixture) TestABlockedConnectionFailsWritesAtOnceUntilUnblocked() {
	f.raw.Block(true, "low on memory")
	f.h.monitor.await(f.T(), "blocked:low on memory")

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrPublishingPaused), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "low on memory")
	f.So(len(f.channel.published), should.Equal, 0)

	f.raw.Block(false, "")
	f.h.monitor.await(f.T(), "unblocked")
	result := f.write(context.Background(), messaging.Dispatch{})
	f.published()
	f.channel.Answer(1, true)
	f.So(receive(f.T(), result, "Write"), should.Resemble, writeResult{n: 1})
}

func (f *WriterFixture) TestABlockWhileAwaitingConfirmsEndsTheWaitAsArrivalUnknown() {
	result := f.write(context.Background(), messaging.Dispatch{MessageID: "1"})
	f.published()

	f.raw.Block(true, "low on memory")
	got := receive(f.T(), result, "Write") // no clock expiry: it fails fast

	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, messaging.ErrPublishingPaused), should.BeTrue)
	f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeTrue) // written: it may still land
	f.So(got.err.Error(), should.ContainSubstring, "low on memory")
	f.So(f.raw.isSevered(), should.BeFalse)
}

func (f *WriterFixture) TestABlockPausesTheMessagesNotYetWrittenWithoutSendingThem() {
	_ = f.connector.Close()
	f.open(1)
	result := f.write(context.Background(), messaging.Dispatch{MessageID: "written"}, messaging.Dispatch{MessageID: "unwritten"})
	f.published() // the second waits for the window

	f.raw.Block(true, "low on memory")
	f.h.monitor.await(f.T(), "blocked:low on memory")
	f.channel.Answer(1, true)
	got := receive(f.T(), result, "Write")

	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	written := publishErr.Results[0]
	if written.Err != nil { // the block may be seen before the confirm: then it may still land
		f.So(errors.Is(written.Err, messaging.ErrPublishingPaused), should.BeTrue)
		f.So(errors.Is(written.Err, messaging.ErrArrivalUnknown), should.BeTrue)
	} else {
		f.So(written, should.Resemble, messaging.PublishResult{MessageID: "written", Confirmed: true, Routed: true})
	}
	f.So(errors.Is(publishErr.Results[1].Err, messaging.ErrPublishingPaused), should.BeTrue)
	f.So(errors.Is(publishErr.Results[1].Err, messaging.ErrArrivalUnknown), should.BeFalse) // never sent
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *WriterFixture) TestClosingAWriterOnABlockedConnectionSeversInsteadOfWaiting() {
	f.raw.Block(true, "low on memory")
	f.h.monitor.await(f.T(), "blocked:low on memory")

	f.So(f.writer.Close(), should.BeNil) // no clock expiry needed
	f.So(f.raw.isSevered(), should.BeTrue)
}

func (f *WriterFixture) TestANewConnectionStartsUnblocked() {
	f.raw.Block(true, "low on memory")
	f.h.monitor.await(f.T(), "blocked:low on memory")

	conn, _ := f.connector.Connect(context.Background())
	writer, _ := conn.Writer(context.Background())
	channel := receive(f.T(), f.h.dialer.last().opened, "the channel")
	result := make(chan error, 1)
	go func() {
		_, err := writer.Write(context.Background(), messaging.Dispatch{})
		result <- err
	}()
	receive(f.T(), channel.published, "a publish")
	channel.Answer(1, true)

	f.So(receive(f.T(), result, "Write"), should.BeNil)
}

func (f *WriterFixture) TestAReservedHeaderRefusesThatDispatchAloneBeforeAnythingIsSent() {
	result := f.write(context.Background(),
		messaging.Dispatch{MessageID: "fine"},
		messaging.Dispatch{MessageID: "spoof", Headers: map[string]any{"x-acemq-id": "mine"}},
	)
	f.So(f.published().msg.MessageId, should.Equal, "fine")
	f.channel.Answer(1, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 1)
	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	f.So(publishErr.Results[0].Err, should.BeNil)
	f.So(publishErr.Results[1].MessageID, should.Equal, "spoof")
	f.So(publishErr.Results[1].Err.Error(), should.EndWith, `header "x-acemq-id" is in the reserved "x-acemq-" namespace and would be dropped on consume; use a namespace of your own, such as x-yourcompany-`)
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *WriterFixture) TestAFieldOverItsWireLimitRefusesThatDispatchAloneAndTheOthersArePublished() {
	long := strings.Repeat("€", 100) // 300 bytes
	tag := uint64(0)
	for _, bad := range []messaging.Dispatch{
		{MessageID: long},
		{RoutingKey: long},
		{CorrelationID: long},
		{ContentType: long},
		{MessageType: long},
		{Headers: map[string]any{strings.Repeat("h", 300): "v"}},
		{Headers: map[string]any{"x-app": struct{}{}}},
		{Payload: make([]byte, wire.DefaultMaxPayload+1)},
	} {
		result := f.write(context.Background(), messaging.Dispatch{MessageID: "before"}, bad, messaging.Dispatch{MessageID: "after"})
		first, second := f.published(), f.published()
		f.channel.Answer(tag+1, true)
		f.channel.Answer(tag+2, true)
		tag += 2
		got := receive(f.T(), result, "Write")

		f.So(first.msg.MessageId, should.Equal, "before")
		f.So(second.msg.MessageId, should.Equal, "after")
		f.So(got.n, should.Equal, 2)
		f.So(errors.Is(got.err, messaging.ErrWireLimit), should.BeTrue)
		var publishErr *messaging.PublishError
		f.So(errors.As(got.err, &publishErr), should.BeTrue)
		f.So(publishErr.Failed(), should.HaveLength, 1)
		var field *messaging.FieldError
		f.So(errors.As(publishErr.Results[1].Err, &field), should.BeTrue)
		f.So(len(f.channel.published), should.Equal, 0)
	}
	f.So(f.raw.isSevered(), should.BeFalse)
}

func (f *WriterFixture) TestAPayloadOverTheConfiguredMaximumIsRefusedNamingTheLimit() {
	_ = f.connector.Close()
	f.connector = New(f.h.options(Options.MaxMessageSize(10))...)
	f.conn, _ = f.connector.Connect(context.Background())
	f.raw = f.h.dialer.last()
	var err error
	f.writer, err = f.conn.Writer(context.Background())
	f.So(err, should.BeNil)

	n, err := f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "big", Payload: make([]byte, 11)})

	f.So(n, should.Equal, 0)
	var field *messaging.FieldError
	f.So(errors.As(err, &field), should.BeTrue)
	f.So(*field, should.Resemble, messaging.FieldError{MessageID: "big", Field: "Payload", Size: 11, Limit: 10})
}

func (f *WriterFixture) TestANestedMapHeaderTravelsAsATable() {
	result := f.write(context.Background(), messaging.Dispatch{Headers: map[string]any{
		"x-app": map[string]any{"inner": map[string]any{"n": 1}, "list": []any{map[string]any{"k": "v"}}},
	}})
	sent := f.published()
	f.channel.Answer(1, true)
	got := receive(f.T(), result, "Write")

	f.So(got.err, should.BeNil)
	f.So(sent.msg.Headers["x-app"], should.Resemble, amqp.Table{
		"inner": amqp.Table{"n": 1},
		"list":  []any{amqp.Table{"k": "v"}},
	})
	f.So(sent.msg.Headers.Validate(), should.BeNil)
}

func (f *WriterFixture) TestWriteAfterCloseIsErrClosed() {
	f.So(f.writer.Close(), should.BeNil)
	f.So(f.writer.Close(), should.BeNil)

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *WriterFixture) TestWriteOnAClosedConnectionIsErrClosed() {
	f.raw.BrokerClose("CONNECTION_FORCED")
	f.h.monitor.await(f.T(), "closed")

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "CONNECTION_FORCED")
}

func (f *WriterFixture) TestConcurrentWritesEachGetTheirOwnAnswer() {
	_ = f.connector.Close()
	f.open(64)
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: fmt.Sprint(i), Mandatory: true})
		})
	}
	for tag := uint64(1); tag <= 40; tag++ {
		p := f.published()
		var id int
		_, _ = fmt.Sscan(p.msg.MessageId, &id)
		if id%2 == 1 {
			f.channel.Return(p.msg.MessageId, "", "")
		}
		f.channel.Answer(tag, true)
	}
	wg.Wait()

	for i, err := range errs {
		f.So(errors.Is(err, messaging.ErrUnroutable), should.Equal, i%2 == 1)
	}
}

func (f *WriterFixture) TestUnclaimedReturnsAreCapped() {
	p := f.writer.(*writer).pub
	for i := range 100 {
		p.file(returnFor(fmt.Sprint(i)))
	}

	f.So(len(p.returned), should.Equal, 64)
	f.So(len(p.returnOrder), should.Equal, 64)
	_, oldestKept := p.returned[returnKey{id: "36"}]
	f.So(oldestKept, should.BeTrue)
	_, droppedKept := p.returned[returnKey{id: "35"}]
	f.So(droppedKept, should.BeFalse)
}

func (f *WriterFixture) TestUnclaimedReturnsOfOneKeyCountTowardsTheCapEach() {
	p := f.writer.(*writer).pub
	for range 100 {
		p.file(returnFor("same"))
	}

	f.So(len(p.returned[returnKey{id: "same"}]), should.Equal, 64)
	f.So(len(p.returnOrder), should.Equal, 64)
}

func (f *WriterFixture) TestAnEarlyReturnOfAnUnroutableMessageIsNotClaimedByARoutableOneWithTheSameID() {
	result := f.write(context.Background(),
		messaging.Dispatch{Topic: "events", RoutingKey: "routed", MessageID: "same", Mandatory: true},
		messaging.Dispatch{Topic: "events", RoutingKey: "nowhere", MessageID: "same", Mandatory: true},
	)
	f.published()
	f.published()

	// The broker returns the unroutable message at once while the routable one's
	// confirm waits for its queue, so the return precedes both confirms.
	f.channel.Return("same", "events", "nowhere")
	f.channel.Answer(1, true)
	f.channel.Answer(2, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 1)
	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	f.So(publishErr.Results[0], should.Resemble, messaging.PublishResult{MessageID: "same", Confirmed: true, Routed: true})
	f.So(errors.Is(publishErr.Results[1].Err, messaging.ErrUnroutable), should.BeTrue)
	f.So(publishErr.Results[1].Err.Error(), should.ContainSubstring, `key "nowhere"`)
}

func (f *WriterFixture) TestReturnsOfOneKeyAreClaimedOldestFirst() {
	result := f.write(context.Background(),
		messaging.Dispatch{RoutingKey: "nowhere", MessageID: "same", Mandatory: true},
		messaging.Dispatch{RoutingKey: "nowhere", MessageID: "same", Mandatory: true},
	)
	f.published()
	f.published()

	f.channel.Return("same", "", "nowhere")
	f.channel.Return("same", "", "nowhere")
	f.channel.Answer(1, true)
	f.channel.Answer(2, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 0)
	f.So(errors.Is(got.err, messaging.ErrUnroutable), should.BeTrue)
	p := f.writer.(*writer).pub
	p.mu.Lock()
	defer p.mu.Unlock()
	f.So(len(p.returned), should.Equal, 0)
	f.So(len(p.returnOrder), should.Equal, 0)
}

func (f *WriterFixture) TestAMessageThatWasNotMandatoryClaimsNoReturn() {
	result := f.write(context.Background(),
		messaging.Dispatch{RoutingKey: "q", MessageID: "same"},
		messaging.Dispatch{RoutingKey: "q", MessageID: "same", Mandatory: true},
	)
	f.published()
	f.published()

	f.channel.Return("same", "", "q")
	f.channel.Answer(1, true)
	f.channel.Answer(2, true)
	got := receive(f.T(), result, "Write")

	f.So(got.n, should.Equal, 1)
	var publishErr *messaging.PublishError
	f.So(errors.As(got.err, &publishErr), should.BeTrue)
	f.So(publishErr.Results[0].Err, should.BeNil)
	f.So(errors.Is(publishErr.Results[1].Err, messaging.ErrUnroutable), should.BeTrue)
}

// A publish that reached the socket is on the wire even when the write's
// bound passes before Publish returns: its confirm answers it, or the severed
// connection does (arrival unknown). It is never reported as not published
// while the broker may hold it, nor as confirmed and failed at once.
func (f *WriterFixture) TestAPublishOnTheWireWhenTheBoundPassesIsNotReportedUnsent() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.channel.AfterPublish(func() {
			f.channel.Answer(1, true)
			pass(DefaultBrokerTimeout) // the bound passes before Publish returns
		})
		got := <-f.write(context.Background(), messaging.Dispatch{MessageID: "1"})
		if got.err == nil {
			f.So(got.n, should.Equal, 1)
			return
		}
		f.So(got.n, should.Equal, 0)
		f.So(errors.Is(got.err, messaging.ErrArrivalUnknown), should.BeTrue)
	})
}
