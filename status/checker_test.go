package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestCheckerFixture(t *testing.T) {
	gunit.Run(new(CheckerFixture), t)
}

type CheckerFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	logs      *bytes.Buffer
	checker   *Checker
}

func (f *CheckerFixture) Setup() { f.build() }

func (f *CheckerFixture) build() {
	f.connector = newFakeConnector()
	f.logs = &bytes.Buffer{}
	f.checker = New(
		Options.Connector(f.connector),
		Options.FailureTolerance(30*time.Second),
		Options.SeverTimeout(5*time.Millisecond),
		Options.Logger(slog.New(slog.NewTextHandler(f.logs, nil))),
	)
}

// inBubble runs body in a synctest bubble with a fresh connector and checker
// made inside it: the tolerance window and the sever timeout run on the
// bubble's synthetic clock (time.Sleep advances it at once), and the fakes'
// channels and the probes' goroutines belong to the bubble.
func (f *CheckerFixture) inBubble(body func()) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.build()
		body()
	})
}

func (f *CheckerFixture) TestHealthyBrokerIsNil() {
	f.So(f.checker.Status(context.Background()), should.BeNil)
	f.So(f.connector.published, should.Equal, 1)
	f.So(f.connector.lastDispatch.Topic, should.Equal, "amq.direct")
	f.So(f.connector.lastDispatch.Mandatory, should.BeFalse)
}

func (f *CheckerFixture) TestConnectionIsReusedBetweenHealthyProbes() {
	_ = f.checker.Status(context.Background())
	_ = f.checker.Status(context.Background())
	f.So(f.connector.connects, should.Equal, 1)
}

func (f *CheckerFixture) TestFailureInsideTheWindowIsToleratedAndLogged() {
	f.inBubble(func() {
		f.connector.commitErr = errors.New("broker restarting")
		f.So(f.checker.Status(context.Background()), should.BeNil)
		time.Sleep(29 * time.Second) // the bubble's clock: the window nearly passes, at once
		f.So(f.checker.Status(context.Background()), should.BeNil)
		f.So(f.logs.String(), should.ContainSubstring, "broker restarting")
	})
}

func (f *CheckerFixture) TestFailurePastTheWindowIsReturned() {
	f.inBubble(func() {
		f.connector.commitErr = errors.New("broker restarting")
		_ = f.checker.Status(context.Background())
		time.Sleep(31 * time.Second) // the bubble's clock: the window passes, at once
		err := f.checker.Status(context.Background())
		f.So(err, should.Wrap, f.connector.commitErr)
		f.So(err.Error(), should.ContainSubstring, "window 30s")
	})
}

func (f *CheckerFixture) TestFailedProbeRedialsNextTime() {
	f.connector.commitErr = errors.New("channel closed")
	_ = f.checker.Status(context.Background())
	f.So(f.connector.closed, should.Equal, 1)
	f.connector.commitErr = nil
	f.So(f.checker.Status(context.Background()), should.BeNil)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *CheckerFixture) TestABlockedConnectionIsKeptThroughTheAlarm() {
	f.connector.commitErr = fmt.Errorf("%w (reason: low on memory): %w", messaging.ErrPublishingPaused, messaging.ErrArrivalUnknown)
	_ = f.checker.Status(context.Background())
	_ = f.checker.Status(context.Background())
	f.So(f.connector.closedCount(), should.Equal, 0)
	f.connector.commitErr = nil
	f.So(f.checker.Status(context.Background()), should.BeNil)
	f.So(f.connector.connects, should.Equal, 1)
}

func (f *CheckerFixture) TestSuccessResetsTheWindow() {
	f.inBubble(func() {
		f.connector.commitErr = errors.New("blip")
		_ = f.checker.Status(context.Background())
		f.connector.commitErr = nil
		time.Sleep(20 * time.Second) // the bubble's clock, as are the sleeps below
		_ = f.checker.Status(context.Background())
		f.connector.commitErr = errors.New("blip again")
		time.Sleep(20 * time.Second) // the bubble's clock: 40 s since the first failure, 20 s since the success
		f.So(f.checker.Status(context.Background()), should.BeNil)
	})
}

func (f *CheckerFixture) TestPermanentRefusalsBypassTheWindow() {
	for _, code := range []int{messaging.ReplyAccessRefused, messaging.ReplyNotAllowed, messaging.ReplyNotFound} {
		f.connector.commitErr = fmt.Errorf("publish: %w", &messaging.BrokerError{Code: code, Text: "refused"})
		err := f.checker.Status(context.Background())
		f.So(err, should.NotBeNil)
		var refused *messaging.BrokerError
		f.So(errors.As(err, &refused), should.BeTrue)
		f.So(refused.Code, should.Equal, code)
	}
}

func (f *CheckerFixture) TestConnectRefusalBypassesTheWindow() {
	f.connector.connectErr = &messaging.BrokerError{Code: messaging.ReplyAccessRefused, Text: "ACCESS_REFUSED"}
	f.So(f.checker.Status(context.Background()), should.NotBeNil)
}

func (f *CheckerFixture) TestBlockedConnectionIsNamedInTheError() {
	f.inBubble(func() {
		f.connector.commitErr = fmt.Errorf("%w (reason: low on memory)", messaging.ErrPublishingPaused)
		_ = f.checker.Status(context.Background())
		time.Sleep(time.Minute) // the bubble's clock: past the window, at once
		err := f.checker.Status(context.Background())
		f.So(errors.Is(err, messaging.ErrPublishingPaused), should.BeTrue)
		f.So(err.Error(), should.ContainSubstring, "low on memory")
	})
}

func (f *CheckerFixture) TestDeadlinePassingFirstSeversTheConnection() {
	f.inBubble(func() {
		f.connector.block = true
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-f.connector.commitStarted
			cancel()
		}()
		f.checker.config.failureTolerance = time.Nanosecond // report the first failure
		f.checker.config.severTimeout = time.Minute         // the severed probe returns well before it
		err := f.checker.run(ctx)
		f.So(errors.Is(err, context.Canceled), should.BeTrue)
		f.So(errors.Is(err, errSevered), should.BeTrue)
		f.So(f.connector.closedCount(), should.Equal, 1)
	})
}

func (f *CheckerFixture) TestProbeIgnoringTheSeverIsAbandonedAfterTheSeverTimeout() {
	f.inBubble(func() {
		f.connector.block = true
		f.connector.ignoreSever = true
		defer close(f.connector.release)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-f.connector.commitStarted
			cancel()
		}()
		began := time.Now()
		err := f.checker.run(ctx)
		f.So(errors.Is(err, context.Canceled), should.BeTrue)
		f.So(err.Error(), should.ContainSubstring, "did not return within 5ms")
		f.So(time.Since(began), should.Equal, 5*time.Millisecond)
	})
}

func (f *CheckerFixture) TestProbeReportsTheFirstFailureWithoutTheWindow() {
	f.connector.commitErr = errors.New("broker restarting")
	f.So(f.checker.Probe(context.Background()), should.Wrap, f.connector.commitErr)
	f.connector.commitErr = nil
	f.So(f.checker.Probe(context.Background()), should.BeNil)
}

func (f *CheckerFixture) TestAProbeAbandonedLaterDoesNotSeverTheNextProbesConnection() {
	f.inBubble(func() {
		f.connector.block = true
		f.connector.ignoreSever = true
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-f.connector.commitStarted
			cancel()
		}()
		_ = f.checker.run(ctx) // abandoned after the sever timeout; its Commit still blocks

		f.connector.mu.Lock()
		f.connector.block = false
		f.connector.mu.Unlock()
		f.So(f.checker.Probe(context.Background()), should.BeNil) // a new connection
		closedBefore := f.connector.closedCount()
		f.connector.release <- struct{}{} // the abandoned probe finally fails
		synctest.Wait()                   // and has finished failing
		f.So(f.checker.Probe(context.Background()), should.BeNil)
		f.So(f.connector.closedCount(), should.Equal, closedBefore) // the new connection survived
	})
}

func (f *CheckerFixture) TestAWaitingCallerGivesUpWhenItsContextEnds() {
	f.inBubble(func() {
		f.connector.block = true
		f.connector.ignoreSever = true
		defer close(f.connector.release)
		first, cancelFirst := context.WithCancel(context.Background())
		defer cancelFirst()
		go func() { _ = f.checker.run(first) }()
		<-f.connector.commitStarted

		second, cancelSecond := context.WithCancel(context.Background())
		cancelSecond()
		err := f.checker.run(second)
		f.So(errors.Is(err, context.Canceled), should.BeTrue)
		f.So(err.Error(), should.ContainSubstring, "another probe is still running")
	})
}

func (f *CheckerFixture) TestWithoutConnector() {
	f.So(New().Status(context.Background()), should.Equal, ErrNoConnector)
}

var errSevered = errors.New("connection severed")

type fakeConnector struct {
	mu            sync.Mutex
	connects      int
	closed        int
	published     int
	lastDispatch  messaging.Dispatch
	connectErr    error
	commitErr     error
	block         bool
	ignoreSever   bool
	commitStarted chan struct{}
	release       chan struct{}
	severed       chan struct{}
}

func newFakeConnector() *fakeConnector {
	return &fakeConnector{commitStarted: make(chan struct{}, 1), release: make(chan struct{}), severed: make(chan struct{}, 8)}
}

func (c *fakeConnector) closedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.connects++
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	return &fakeConnection{connector: c}, nil
}
func (c *fakeConnector) Close() error { return nil }

type fakeConnection struct{ connector *fakeConnector }

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) { return nil, nil }
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) { return nil, nil }
func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return &fakeWriter{connector: c.connector}, nil
}
func (c *fakeConnection) Close() error {
	c.connector.mu.Lock()
	c.connector.closed++
	c.connector.mu.Unlock()
	c.connector.severed <- struct{}{}
	return nil
}

type fakeWriter struct{ connector *fakeConnector }

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.connector.published += len(dispatches)
	w.connector.lastDispatch = dispatches[0]
	return len(dispatches), nil
}
func (w *fakeWriter) Commit() error {
	if !w.connector.block {
		return w.connector.commitErr
	}
	w.connector.commitStarted <- struct{}{}
	if w.connector.ignoreSever {
		<-w.connector.release
		return errSevered
	}
	<-w.connector.severed
	return errSevered
}
func (w *fakeWriter) Rollback() error { return nil }
func (w *fakeWriter) Close() error    { return nil }
