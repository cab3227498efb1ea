package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/streaming"
)

func TestGroupFixture(t *testing.T) {
	gunit.Run(new(GroupFixture), t)
}

// GroupFixture starts groups over the memory transport, behind a connector
// that counts the connections open and can refuse some.
type GroupFixture struct {
	*gunit.Fixture
	broker    *memory.Broker
	connector *countingConnector
	monitor   *fakeMonitor
	quiet     *slog.Logger
}

func (f *GroupFixture) Setup() {
	f.broker = memory.New()
	f.connector = &countingConnector{inner: f.broker}
	f.monitor = &fakeMonitor{}
	f.quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (f *GroupFixture) Teardown() { _ = f.broker.Close() }

func (f *GroupFixture) start(n int) (*Group, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nop := messaging.HandlerFunc(func(context.Context, ...any) {})
	return New(ctx, f.connector, "orders", n, nop, Options.Logger(f.quiet), Options.Monitor(f.monitor))
}

func (f *GroupFixture) TestEveryMemberHasItsOwnConnectionAndCloseStopsThemAll() {
	g, err := f.start(4)
	f.So(err, should.BeNil)
	f.So(g.Members(), should.Equal, 4)
	f.So(f.connector.opened(), should.Equal, 4)
	f.So(g.Close(), should.BeNil)
	f.So(g.Close(), should.BeNil)
	f.So(f.connector.opened(), should.Equal, 0)
	f.So(f.monitor.events(), should.Equal, []string{"started 4", "closed", "closed", "closed", "closed"})
}

func (f *GroupFixture) TestAMemberThatCannotStartClosesTheOthersAndReturnsTheError() {
	f.connector.refuseFrom = 3 // the first two connect; the others are refused
	g, err := f.start(4)
	f.So(g, should.BeNil)
	f.So(errors.Is(err, messaging.ErrAccessRefused), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "did not start, so the group was closed")
	f.So(f.connector.opened(), should.Equal, 0)
	f.So(f.connector.connects(), should.BeGreaterThanOrEqualTo, 3)
	events := f.monitor.events()
	f.So(events[0], should.StartWith, "start failed")
	f.So(events[1:], should.HaveLength, 4)
}

func (f *GroupFixture) TestTheArgumentsAreChecked() {
	ctx := context.Background()
	nop := messaging.HandlerFunc(func(context.Context, ...any) {})
	_, err := New(ctx, nil, "orders", 1, nop)
	f.So(err, should.NotBeNil)
	_, err = New(ctx, f.connector, "", 1, nop)
	f.So(err, should.NotBeNil)
	_, err = New(ctx, f.connector, "orders", 0, nop)
	f.So(err.Error(), should.Equal, "group: a consumer group of orders needs at least one member, not 0")
	_, err = New(ctx, f.connector, "orders", 2, nil)
	f.So(err, should.NotBeNil)
	_, err = NewEach(ctx, f.connector, "orders", 2, func(i int) messaging.Handler {
		if i == 1 {
			return nil
		}
		return nop
	})
	f.So(err.Error(), should.Equal, "group: member 2 of the consumer group of orders has no handler")
	f.So(f.connector.connects(), should.Equal, 0)
	f.So(CloseMemberOfNothing(), should.NotBeNil)
}

// A member whose handler outlives its shutdown bound is abandoned, and Close
// says so: the member's ErrShutdownForced, naming the member, in the joined
// error (before, Close always returned nil).
func (f *GroupFixture) TestCloseReturnsTheMembersErrors() {
	release := make(chan struct{})
	defer close(release)
	stuck := make(chan struct{}, 16)
	handler := messaging.HandlerFunc(func(context.Context, ...any) {
		stuck <- struct{}{}
		<-release // a handler that does not stop in time
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := New(ctx, f.connector, "orders", 2, handler, Options.Logger(f.quiet),
		Options.Subscription(streaming.SubscriptionOptions.ShutdownStrategy(streaming.ShutdownStrategyCurrentBatch, 50*time.Millisecond)))
	f.So(err, should.BeNil)
	f.So(f.broker.Publish(ctx, messaging.Dispatch{RoutingKey: "orders", Payload: []byte("{}")}), should.BeNil)
	<-stuck
	err = g.Close()
	f.So(errors.Is(err, messaging.ErrShutdownForced), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "of 2 consuming orders")
	f.So(g.Close(), should.BeNil)
}

// CloseMemberOfNothing asks a group for a member it does not have.
func CloseMemberOfNothing() error { return (&Group{queue: "orders"}).CloseMember(0) }

// countingConnector counts Connect calls and open connections; from the
// refuseFrom-th call on (when set) it refuses with ErrAccessRefused.
type countingConnector struct {
	inner      messaging.Connector
	mu         sync.Mutex
	calls      int
	open       int
	refuseFrom int
}

func (c *countingConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	c.calls++
	refuse := c.refuseFrom > 0 && c.calls >= c.refuseFrom
	c.mu.Unlock()
	if refuse {
		return nil, fmt.Errorf("connect: %w", messaging.ErrAccessRefused)
	}
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.open++
	c.mu.Unlock()
	return &countedConnection{Connection: conn, parent: c}, nil
}

func (c *countingConnector) Close() error { return nil }

func (c *countingConnector) opened() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

func (c *countingConnector) connects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

type countedConnection struct {
	messaging.Connection
	parent *countingConnector
	once   sync.Once
}

func (c *countedConnection) Close() error {
	c.once.Do(func() {
		c.parent.mu.Lock()
		c.parent.open--
		c.parent.mu.Unlock()
	})
	return c.Connection.Close()
}

type fakeMonitor struct {
	mu  sync.Mutex
	log []string
}

func (m *fakeMonitor) Started(_ string, members int) { m.add(fmt.Sprint("started ", members)) }
func (m *fakeMonitor) StartFailed(_ string, err error) {
	m.add("start failed: " + err.Error())
}
func (m *fakeMonitor) MemberClosed(string) { m.add("closed") }

func (m *fakeMonitor) add(event string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, event)
}

func (m *fakeMonitor) events() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.log...)
}

// openings is a streaming.Monitor that counts the streams opened.
type openings struct {
	streaming.NopMonitor
	mu     sync.Mutex
	opened int
}

func (o *openings) StreamOpened(_ string, err error) {
	if err == nil {
		o.mu.Lock()
		o.opened++
		o.mu.Unlock()
	}
}

func (f *GroupFixture) TestTheStreamingMonitorHearsEveryMember() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	heard := &openings{}
	nop := messaging.HandlerFunc(func(context.Context, ...any) {})
	g, err := New(ctx, f.connector, "orders", 3, nop, Options.Logger(f.quiet), Options.StreamingMonitor(heard))
	f.So(err, should.BeNil)
	f.So(g.Close(), should.BeNil)
	heard.mu.Lock()
	defer heard.mu.Unlock()
	f.So(heard.opened, should.Equal, 3)
}
