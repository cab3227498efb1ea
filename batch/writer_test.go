package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestWriterFixture(t *testing.T) {
	gunit.Run(new(WriterFixture), t)
}

type WriterFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	writer    *Writer
}

func (f *WriterFixture) Setup() {
	f.connector = &fakeConnector{inside: make(chan struct{}, 8)}
	f.writer = New(f.connector)
}

func (f *WriterFixture) TestNothingToWriteDoesNotConnect() {
	n, err := f.writer.Write(context.Background())
	f.So(n, should.Equal, 0)
	f.So(err, should.BeNil)
	f.So(f.connector.connects, should.Equal, 0)
}

func (f *WriterFixture) TestWriteConnectsLazilyWritesAndCommits() {
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"}, messaging.Dispatch{MessageID: "2"})
	f.So(err, should.BeNil)
	f.So(n, should.Equal, 2)
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().last().written, should.HaveLength, 2)
	f.So(f.connector.last().last().commits, should.Equal, 1)
}

func (f *WriterFixture) TestConnectionIsReusedAcrossCalls() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().writers, should.HaveLength, 1)
	f.So(f.connector.last().last().commits, should.Equal, 2)
}

func (f *WriterFixture) TestConnectFailureIsReturnedAndRetriedNextCall() {
	f.connector.connectErr = errors.New("refused")
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.Wrap, f.connector.connectErr)

	f.connector.connectErr = nil
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.BeNil)
	f.So(n, should.Equal, 1)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestWriterOpenFailureClosesConnection() {
	f.connector.writerErr = errors.New("channel refused")
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.Wrap, f.connector.writerErr)
	f.So(f.connector.last().closed, should.BeTrue)
}

func (f *WriterFixture) TestWriteFailureRedialsOnNextCall() {
	f.connector.writeErr = errors.New("socket gone")
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.Wrap, f.connector.writeErr)
	first := f.connector.last()
	f.So(first.closed, should.BeTrue)
	f.So(first.last().closed, should.BeTrue)

	f.connector.writeErr = nil
	_, err = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.BeNil)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestCommitTimeoutRedials() {
	f.connector.commitErr = messaging.ErrCommitTimeout
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrCommitTimeout), should.BeTrue)
	f.So(f.connector.last().closed, should.BeTrue)
}

func (f *WriterFixture) TestUnroutableCommitKeepsTheConnectionAndCountsWhatLanded() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Confirmed: true, Routed: true},
		{MessageID: "b", Confirmed: true, Err: messaging.ErrUnroutable},
	}}
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{}, messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(n, should.Equal, 1)
	f.So(f.connector.last().closed, should.BeFalse)
}

func (f *WriterFixture) TestArrivalUnknownRedials() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: messaging.ErrArrivalUnknown},
	}}
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrArrivalUnknown), should.BeTrue)
	f.So(f.connector.last().closed, should.BeTrue)
}

func (f *WriterFixture) TestANackKeepsTheConnectionButTheNextCallOpensANewChannel() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: messaging.ErrRefused},
	}}
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrRefused), should.BeTrue)
	f.connector.commitErr = nil
	_, err = f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(err, should.BeNil)
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().closed, should.BeFalse)
	f.So(f.connector.last().writers, should.HaveLength, 2)
	f.So(f.connector.last().writers[0].closed, should.BeTrue)
}

func (f *WriterFixture) TestABlockedConnectionIsKeptAndWritesResumeOnItWhenUnblocked() {
	f.connector.commitErr = fmt.Errorf("the broker has blocked this connection: %w", messaging.ErrPublishingPaused)
	for range 5 {
		n, err := f.writer.Write(context.Background(), messaging.Dispatch{})
		f.So(n, should.Equal, 0)
		f.So(errors.Is(err, messaging.ErrPublishingPaused), should.BeTrue)
	}
	f.connector.commitErr = nil
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(n, should.Equal, 1)
	f.So(err, should.BeNil)
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().closed, should.BeFalse)
	f.So(f.connector.last().writers, should.HaveLength, 1)
	f.So(f.connector.last().last().closed, should.BeFalse)
}

func (f *WriterFixture) TestAPublishCaughtByTheBlockKeepsTheConnection() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: fmt.Errorf("paused: %w; may still arrive: %w", messaging.ErrPublishingPaused, messaging.ErrArrivalUnknown)},
		{MessageID: "b", Err: fmt.Errorf("not sent: %w", messaging.ErrPublishingPaused)},
	}}
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{}, messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrPublishingPaused), should.BeTrue)
	f.So(f.connector.last().closed, should.BeFalse)
}

func (f *WriterFixture) TestADispatchRefusedForAWireLimitKeepsTheConnectionAndCountsWhatLanded() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Confirmed: true, Routed: true},
		{MessageID: "b", Err: &messaging.FieldError{Field: "MessageID", Size: 300, Limit: 255}},
		{MessageID: "c", Confirmed: true, Routed: true},
	}}
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{}, messaging.Dispatch{}, messaging.Dispatch{})

	f.So(n, should.Equal, 2)
	f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	f.So(f.connector.last().closed, should.BeFalse)
}

func (f *WriterFixture) TestAWriteRefusedForAWireLimitKeepsTheConnectionAndItsWriter() {
	f.connector.writeErr = &messaging.FieldError{Field: "RoutingKey", Size: 300, Limit: 255}
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	f.connector.writeErr = nil
	_, err = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(err, should.BeNil)
	f.So(f.connector.last().closed, should.BeFalse)
	f.So(f.connector.last().writers, should.HaveLength, 1)
	f.So(f.connector.last().last().written, should.HaveLength, 1) // nothing of the refused call was sent
}

func (f *WriterFixture) TestConcurrentCallsShareOneWriterWithoutWaitingForEachOther() {
	gate := make(chan struct{})
	f.connector.hold = gate
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
			done <- err
		}()
	}
	// Both calls are inside the shared writer's Write at once: with calls
	// serialised the second would not arrive until the first returned.
	for range 2 {
		select {
		case <-f.connector.inside:
		case <-time.After(5 * time.Second):
			close(gate)
			f.T().(*testing.T).Fatal("the second call waited for the first: calls are serialised")
		}
	}
	close(gate)
	for range 2 {
		f.So(<-done, should.BeNil)
	}
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().writers, should.HaveLength, 1)
}

func (f *WriterFixture) TestAPausedFailureMixedWithALostConfirmRedials() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: fmt.Errorf("paused: %w", messaging.ErrPublishingPaused)},
		{MessageID: "b", Err: fmt.Errorf("channel closed: %w", messaging.ErrArrivalUnknown)},
	}}
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{}, messaging.Dispatch{})

	f.So(f.connector.last().closed, should.BeTrue)
}

func (f *WriterFixture) TestAConnectionFoundClosedBeforeSendingIsDialledAgainAndTheCallLands() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.connector.script = []error{fmt.Errorf("the writer's channel has closed: %w", messaging.ErrClosed)}

	n, err := f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "after the idle close"})

	f.So(err, should.BeNil)
	f.So(n, should.Equal, 1)
	f.So(f.connector.connects, should.Equal, 2)
	f.So(f.connector.connections[0].closed, should.BeTrue)
	f.So(f.connector.last().last().written, should.HaveLength, 1)
}

func (f *WriterFixture) TestAConnectionTheBrokerForcedClosedIsDialledAgain() {
	forced := &messaging.BrokerError{Code: 320, Text: "CONNECTION_FORCED - closed via management plugin"}
	f.connector.script = []error{fmt.Errorf("the writer's channel has closed (%w): %w", forced, messaging.ErrClosed)}

	n, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(err, should.BeNil)
	f.So(n, should.Equal, 1)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestAWriteThatMayHaveArrivedIsNotSentAgainButTheNextCallRedials() {
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: fmt.Errorf("the channel closed before the broker confirmed it (%w): %w", messaging.ErrClosed, messaging.ErrArrivalUnknown)},
	}}
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "a"})

	f.So(n, should.Equal, 0)
	f.So(errors.Is(err, messaging.ErrArrivalUnknown), should.BeTrue)
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.last().last().written, should.HaveLength, 1)
	f.So(f.connector.last().closed, should.BeTrue)
}

func (f *WriterFixture) TestAConnectionClosedAgainAfterTheRedialFailsTheCallWithoutLooping() {
	closed := fmt.Errorf("connection closed: %w", messaging.ErrClosed)
	f.connector.writeErr = closed

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestACallerThatStoppedWaitingLeavesTheSharedConnectionToTheOthers() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.connector.commitErr = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: fmt.Errorf("stopped waiting for the broker's confirm (%w): %w", context.Canceled, messaging.ErrArrivalUnknown)},
	}}

	_, err := f.writer.Write(ctx, messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrArrivalUnknown), should.BeTrue)
	f.So(f.connector.last().closed, should.BeFalse)
	f.So(f.connector.last().last().closed, should.BeFalse)
}

func (f *WriterFixture) TestAFullWindowKeepsTheConnection() {
	f.connector.commitErr = fmt.Errorf("no confirm freed the window: %w", messaging.ErrTooManyOutstanding)
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrTooManyOutstanding), should.BeTrue)
	f.So(f.connector.last().closed, should.BeFalse)
}

func (f *WriterFixture) TestAnErrorTheRuleDoesNotKnowRedials() {
	f.connector.writeErr = errors.New("something unexpected")
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(f.connector.last().closed, should.BeTrue)
	f.So(f.connector.connects, should.Equal, 1)
}

func (f *WriterFixture) TestDeclareRunsOnThePublishingConnectionOncePerConnectionAndKey() {
	var on []messaging.Connection
	declare := func(_ context.Context, connection messaging.Connection) error {
		on = append(on, connection)
		return nil
	}
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(f.writer.Declare(context.Background(), "rung 1", declare), should.BeNil)
	f.So(f.writer.Declare(context.Background(), "rung 1", declare), should.BeNil)
	f.So(f.writer.Declare(context.Background(), "rung 2", declare), should.BeNil)

	f.So(on, should.HaveLength, 2)
	f.So(on[0], should.Equal, f.connector.last())
	f.So(f.connector.connects, should.Equal, 1)
}

func (f *WriterFixture) TestDeclareRunsAgainOnTheConnectionOfARedial() {
	runs := 0
	declare := func(context.Context, messaging.Connection) error { runs++; return nil }
	f.So(f.writer.Declare(context.Background(), "rung", declare), should.BeNil)
	f.connector.script = []error{fmt.Errorf("reset: %w", messaging.ErrArrivalUnknown)}
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(f.writer.Declare(context.Background(), "rung", declare), should.BeNil)

	f.So(runs, should.Equal, 2)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestAFailedDeclarationIsNotRememberedAndKeepsASoundConnection() {
	refused := &messaging.BrokerError{Code: 406, Text: "PRECONDITION_FAILED - inequivalent arg"}
	err := f.writer.Declare(context.Background(), "rung", func(context.Context, messaging.Connection) error { return refused })
	f.So(err, should.Wrap, messaging.ErrPreconditionFailed)
	f.So(f.connector.last().closed, should.BeFalse)

	runs := 0
	f.So(f.writer.Declare(context.Background(), "rung", func(context.Context, messaging.Connection) error { runs++; return nil }), should.BeNil)
	f.So(runs, should.Equal, 1)
}

func (f *WriterFixture) TestADeclarationWhoseConnectionWasLostDialsAgainNextTime() {
	err := f.writer.Declare(context.Background(), "rung", func(context.Context, messaging.Connection) error {
		return fmt.Errorf("declare: %w", messaging.ErrClosed)
	})
	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(f.connector.last().closed, should.BeTrue)
	f.So(f.writer.Declare(context.Background(), "rung", func(context.Context, messaging.Connection) error { return nil }), should.BeNil)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *WriterFixture) TestDeclareAfterCloseIsErrClosed() {
	f.So(f.writer.Close(), should.BeNil)
	err := f.writer.Declare(context.Background(), "rung", func(context.Context, messaging.Connection) error { return nil })
	f.So(err, should.Wrap, messaging.ErrClosed)
}

func (f *WriterFixture) TestCloseReleasesAndRefusesLaterWrites() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(f.writer.Close(), should.BeNil)
	f.So(f.connector.last().closed, should.BeTrue)
	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

type fakeConnector struct {
	connects    int
	connections []*fakeConnection
	connectErr  error
	writerErr   error
	writeErr    error
	commitErr   error
	// script, when not empty, answers the next Writes in turn (nil: as the
	// other fields say), before writeErr and commitErr.
	script []error
	// hold, when set, makes every Write signal inside and wait for it to close.
	hold   chan struct{}
	inside chan struct{}
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.connects++
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	connection := &fakeConnection{connector: c}
	c.connections = append(c.connections, connection)
	return connection, nil
}
func (c *fakeConnector) Close() error          { return nil }
func (c *fakeConnector) last() *fakeConnection { return c.connections[len(c.connections)-1] }

type fakeConnection struct {
	connector *fakeConnector
	writers   []*fakeWriter
	closed    bool
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) { return nil, nil }
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	if c.connector.writerErr != nil {
		return nil, c.connector.writerErr
	}
	writer := &fakeWriter{connector: c.connector}
	c.writers = append(c.writers, writer)
	return writer, nil
}
func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return nil, errors.New("batch must publish through the shared Writer")
}
func (c *fakeConnection) Close() error      { c.closed = true; return nil }
func (c *fakeConnection) last() *fakeWriter { return c.writers[len(c.writers)-1] }

type fakeWriter struct {
	connector *fakeConnector
	written   []messaging.Dispatch
	commits   int
	closed    bool
	mu        sync.Mutex
}

// Write is a transport Writer's: publish, then wait for the confirms
// (commitErr stands for what the confirms said; commits counts the calls
// that got that far).
func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if w.connector.hold != nil {
		w.connector.inside <- struct{}{}
		<-w.connector.hold
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	if len(w.connector.script) > 0 {
		err := w.connector.script[0]
		w.connector.script = w.connector.script[1:]
		if err != nil {
			return 0, err
		}
	} else if w.connector.writeErr != nil {
		return 0, w.connector.writeErr
	}
	w.written = append(w.written, dispatches...)
	w.commits++
	if err := w.connector.commitErr; err != nil {
		return landed(err), err
	}
	return len(dispatches), nil
}
func (w *fakeWriter) Close() error { w.closed = true; return nil }
