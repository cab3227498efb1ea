package rabbitmq

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestShareFixture(t *testing.T) {
	gunit.Run(new(ShareFixture), t)
}

type ShareFixture struct {
	*gunit.Fixture
	h          *harness
	connectors []messaging.Connector
}

func (f *ShareFixture) Setup() {
	f.h = newHarness()
}

func (f *ShareFixture) Teardown() {
	for _, connector := range f.connectors {
		_ = connector.Close()
	}
}

func (f *ShareFixture) connector(extra ...Option) messaging.Connector {
	connector := New(f.h.options(append([]Option{Options.ShareConnections(true)}, extra...)...)...)
	f.connectors = append(f.connectors, connector)
	return connector
}

func (f *ShareFixture) connect(connector messaging.Connector) messaging.Connection {
	conn, err := connector.Connect(context.Background())
	f.So(err, should.BeNil)
	return conn
}

func (f *ShareFixture) dials() int {
	f.h.dialer.mu.Lock()
	defer f.h.dialer.mu.Unlock()
	return len(f.h.dialer.addresses)
}

func (f *ShareFixture) TestEveryConnectSharesOnePublishingAndOneConsumingConnection() {
	connector := f.connector()
	first, second := f.connect(connector), f.connect(connector)
	f.So(f.dials(), should.Equal, 1) // Connect binds the publishing connection

	for _, conn := range []messaging.Connection{first, second} {
		_, err := conn.Writer(context.Background())
		f.So(err, should.BeNil)
		_, err = conn.CommitWriter(context.Background())
		f.So(err, should.BeNil)
		reader, err := conn.Reader(context.Background())
		f.So(err, should.BeNil)
		_, err = reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders"})
		f.So(err, should.BeNil)
	}

	f.So(f.dials(), should.Equal, 2)
	publishing, consuming := f.h.dialer.connections[0], f.h.dialer.connections[1]
	f.So(publishing.channels, should.HaveLength, 4) // two writers, two commit writers
	f.So(consuming.channels, should.HaveLength, 2)  // each reader's channel, which its stream took over
	f.So(f.h.dialer.configs[1].Properties["connection_name"], should.Equal, f.h.dialer.configs[0].Properties["connection_name"])
}

func (f *ShareFixture) TestAHandleClosesOnlyItsOwnChannelsAndTheLastOneTheConnection() {
	connector := f.connector()
	first, second := f.connect(connector), f.connect(connector)
	mine, err := first.Writer(context.Background())
	f.So(err, should.BeNil)
	theirs, err := second.Writer(context.Background())
	f.So(err, should.BeNil)
	raw := f.h.dialer.last()

	f.So(first.Close(), should.BeNil)
	_, err = mine.Write(context.Background(), messaging.Dispatch{RoutingKey: "q", Payload: []byte("x")})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	_, err = first.Writer(context.Background())
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	f.So(raw.closeCalls, should.Equal, 0)
	f.So(raw.channels[0].closed, should.BeTrue)
	f.So(raw.channels[1].closed, should.BeFalse)

	f.So(theirs.Close(), should.BeNil)
	f.So(second.Close(), should.BeNil)
	f.So(raw.closeCalls, should.Equal, 1)

	f.connect(connector)
	f.So(f.dials(), should.Equal, 2) // the closed connection is not reused
}

func (f *ShareFixture) TestAChannelTheBrokerClosedLeavesTheConnectionToTheOthers() {
	connector := f.connector()
	first, second := f.connect(connector), f.connect(connector)
	refused, err := first.Writer(context.Background())
	f.So(err, should.BeNil)
	going, err := second.Writer(context.Background())
	f.So(err, should.BeNil)
	raw := f.h.dialer.last()
	refusedChannel := receive(f.T(), raw.opened, "the first writer's channel")
	goingChannel := receive(f.T(), raw.opened, "the second writer's channel")

	refusedChannel.BrokerClose(404, "NOT_FOUND - no exchange 'missing'")
	f.So(first.Close(), should.BeNil)
	goingChannel.AfterPublish(func() { goingChannel.Answer(1, true) })
	n, err := going.Write(context.Background(), messaging.Dispatch{RoutingKey: "q", Payload: []byte("x")})

	f.So(err, should.BeNil)
	f.So(n, should.Equal, 1)
	f.So(raw.closeCalls, should.Equal, 0)
	_, err = refused.Write(context.Background(), messaging.Dispatch{RoutingKey: "q", Payload: []byte("x")})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *ShareFixture) TestADroppedConnectionIsDialledOnceForEveryHandleThatFollows() {
	connector := f.connector()
	old := f.connect(connector)
	f.h.dialer.last().BrokerClose("CONNECTION_FORCED - closed by an operator")
	f.h.monitor.await(f.T(), "closed")

	_, err := old.Writer(context.Background())
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	handles := []messaging.Connection{f.connect(connector), f.connect(connector), f.connect(connector)}
	for _, conn := range handles {
		_, err := conn.Writer(context.Background())
		f.So(err, should.BeNil)
	}
	f.So(f.dials(), should.Equal, 2)
	f.So(old.Close(), should.BeNil)
}

func (f *ShareFixture) TestThoseWhoWaitForADialShareItsFailure() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.h = newHarness()
		gate := make(chan struct{})
		f.h.dialer.gate, f.h.dialer.err = gate, errors.New("dial tcp 127.0.0.1:5672: connect: connection refused")
		connector := New(f.h.options(Options.ShareConnections(true))...)
		defer connector.Close()
		results := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := connector.Connect(context.Background())
				results <- err
			}()
		}
		synctest.Wait() // one dial in flight, the others waiting for it
		f.So(len(f.h.dialer.dialing), should.Equal, 1)
		close(gate)
		for range 3 {
			err := <-results
			f.So(err, should.NotBeNil)
			f.So(err.Error(), should.ContainSubstring, "connection refused")
		}
		f.So(f.dials(), should.Equal, 1)
	})
}

func (f *ShareFixture) TestAWaitForADialEndsWithItsContextAndAnAbandonedDialIsNotShared() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.h = newHarness()
		f.h.dialer.block = true
		connector := New(f.h.options(Options.ShareConnections(true), Options.BrokerTimeout(time.Minute))...)
		defer connector.Close()
		dialler, cancelDial := context.WithCancel(context.Background())
		waiter, cancelWait := context.WithCancel(context.Background())
		patient := context.Background()
		results := make(chan error, 3)
		go func() { _, err := connector.Connect(dialler); results <- err }()
		synctest.Wait()
		go func() { _, err := connector.Connect(waiter); results <- err }()
		go func() { _, err := connector.Connect(patient); results <- err }()
		synctest.Wait()
		f.So(f.dials(), should.Equal, 1)

		cancelWait()
		f.So(errors.Is(<-results, context.Canceled), should.BeTrue)
		f.So(f.dials(), should.Equal, 1)

		cancelDial()
		f.So(errors.Is(<-results, context.Canceled), should.BeTrue)
		synctest.Wait()
		f.So(f.dials(), should.Equal, 2) // the patient caller dials for itself

		err := <-results // its own dial passes the broker timeout
		f.So(errors.Is(err, ErrConnectTimeout), should.BeTrue)
	})
}

func (f *ShareFixture) TestDeclarationsTravelOnTheConsumingConnectionWithTheReaders() {
	connector := f.connector()
	conn := f.connect(connector)
	declarer, ok := messaging.As[messaging.Declarer](conn)
	f.So(ok, should.BeTrue)

	err := declarer.DeclareQueue(context.Background(), messaging.Queue{Name: "replies", Exclusive: true, AutoDelete: true})

	f.So(err, should.BeNil)
	f.So(f.dials(), should.Equal, 2)
	publishing, consuming := f.h.dialer.connections[0], f.h.dialer.connections[1]
	f.So(publishing.channels, should.BeEmpty)
	f.So(consuming.channels, should.HaveLength, 1)
	f.So(consuming.channels[0].Calls()[0].method, should.Equal, "QueueDeclare")
	f.So(consuming.channels[0].closed, should.BeTrue) // a declaration's channel is its own
}

func (f *ShareFixture) TestAHandleClosesItsReadersAndTheirStreams() {
	connector := f.connector()
	conn := f.connect(connector)
	reader, err := conn.Reader(context.Background())
	f.So(err, should.BeNil)
	stream, err := reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders"})
	f.So(err, should.BeNil)

	f.So(conn.Close(), should.BeNil)

	var d messaging.Delivery
	f.So(errors.Is(stream.Read(context.Background(), &d), messaging.ErrClosed), should.BeTrue)
	_, err = reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders"})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	f.So(f.h.dialer.connections[1].closeCalls, should.Equal, 1)
}
