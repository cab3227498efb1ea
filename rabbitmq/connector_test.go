package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestConnectorFixture(t *testing.T) {
	gunit.Run(new(ConnectorFixture), t)
}

type ConnectorFixture struct {
	*gunit.Fixture
	h *harness
}

func (f *ConnectorFixture) Setup() {
	f.h = newHarness()
}

func (f *ConnectorFixture) connector(extra ...Option) messaging.Connector {
	return New(f.h.options(extra...)...)
}

func (f *ConnectorFixture) TestDefaultsReplaceZeroAndNegativeValues() {
	config := newConfig([]Option{Options.Heartbeat(-1), Options.BrokerTimeout(0), Options.MaxOutstandingPublishes(-5)})

	f.So(config.addresses, should.Equal, []string{"amqp://guest:guest@127.0.0.1:5672/"})
	f.So(config.heartbeat, should.Equal, 10*time.Second)
	f.So(config.brokerTimeout, should.Equal, 30*time.Second)
	f.So(config.maxOutstanding, should.Equal, 1000)
	f.So(config.origin, should.StartWith, "acemq@")
	f.So(config.monitor, should.Resemble, NopMonitor{})
	f.So(config.dialer, should.NotBeNil)
	f.So(config.logger, should.NotBeNil)
}

func (f *ConnectorFixture) TestConnectDialsWithTheConfiguredSettings() {
	tlsConfig := &tls.Config{ServerName: "broker"}
	connector := f.connector(
		Options.Address("amqps://user:secret@broker:5671/vhost"),
		Options.Heartbeat(3*time.Second),
		Options.ConnectionName("orders-service"),
		Options.TLS(tlsConfig),
	)

	conn, err := connector.Connect(context.Background())

	f.So(err, should.BeNil)
	f.So(conn, should.NotBeNil)
	f.So(f.h.dialer.addresses, should.Resemble, []string{"amqps://user:secret@broker:5671/vhost"})
	config := f.h.dialer.configs[0]
	f.So(config.Heartbeat, should.Equal, 3*time.Second)
	f.So(config.Properties["connection_name"], should.Equal, "orders-service")
	f.So(config.TLSClientConfig.ServerName, should.Equal, "broker")
	f.So(config.TLSClientConfig, should.NotPointTo, tlsConfig)
	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened"})
	f.So(f.h.monitor.Errors()[0], should.BeNil)
}

func (f *ConnectorFixture) TestMalformedAddressFailsWithoutDialling() {
	_, err := f.connector(Options.Address("amqp://user:secret@host:notaport/")).Connect(context.Background())

	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "malformed")
	f.So(err.Error(), should.NotContainSubstring, "secret")
	f.So(f.h.dialer.configs, should.BeEmpty)
	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened"})
	f.So(f.h.monitor.Errors()[0], should.Equal, err)
}

func (f *ConnectorFixture) TestRefusedCredentialsSayWhatToFix() {
	f.h.dialer.err = amqp.ErrCredentials

	_, err := f.connector(Options.Address("amqp://guest:secret@host:5672/")).Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "refused the credentials")
	f.So(err.Error(), should.NotContainSubstring, "secret")
	f.So(errors.Is(err, amqp.ErrCredentials), should.BeTrue)
	f.So(err, should.Wrap, messaging.ErrAccessRefused)
	f.So(len(f.h.dialer.configs), should.Equal, 1) // no retry loop
}

func (f *ConnectorFixture) TestRefusedVirtualHostSaysSo() {
	f.h.dialer.err = &amqp.Error{Code: amqp.NotAllowed, Reason: "vhost nope not found", Server: true}

	_, err := f.connector().Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "refused access to the virtual host")
	f.So(err, should.Wrap, messaging.ErrAccessRefused)
}

func (f *ConnectorFixture) TestUnreachableBrokerSaysHowToStartIt() {
	f.h.dialer.err = errors.New("dial tcp 127.0.0.1:5672: connect: connection refused")

	_, err := f.connector().Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "connection refused")
	f.So(err.Error(), should.ContainSubstring, "is the broker running")
}

func (f *ConnectorFixture) TestAStalledHandshakeEndsAtTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, func() {}, func() {
		f.h.dialer.block = true
		connector := f.connector(Options.BrokerTimeout(7 * time.Second))
		started := time.Now()

		_, err := connector.Connect(context.Background())

		f.So(time.Since(started), should.Equal, 7*time.Second)
		f.So(errors.Is(err, ErrConnectTimeout), should.BeTrue)
		f.So(err.Error(), should.ContainSubstring, "did not complete within [7s]")
		f.So(f.h.monitor.Errors()[0], should.Equal, err)
	})
}

func (f *ConnectorFixture) TestACancelledContextAbandonsTheDial() {
	f.h.dialer.block = true
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := f.connector().Connect(ctx)
		result <- err
	}()
	receive(f.T(), f.h.dialer.dialing, "the dial")
	cancel()

	err := receive(f.T(), result, "Connect to return")

	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(errors.Is(err, ErrConnectTimeout), should.BeFalse)
}

func (f *ConnectorFixture) TestCloseClosesEveryOpenConnectionAndRefusesNewOnes() {
	connector := f.connector()
	_, _ = connector.Connect(context.Background())
	_, _ = connector.Connect(context.Background())

	err := connector.Close()

	f.So(err, should.BeNil)
	for _, conn := range f.h.dialer.connections {
		f.So(conn.closeCalls, should.Equal, 1)
	}
	_, err = connector.Connect(context.Background())
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *ConnectorFixture) TestAConnectionClosedByTheBrokerIsReportedWithItsReason() {
	connector := f.connector()
	_, _ = connector.Connect(context.Background())

	f.h.dialer.last().BrokerClose("CONNECTION_FORCED - closed via management plugin")

	f.h.monitor.await(f.T(), "closed")
	f.So(f.h.logs.String(), should.ContainSubstring, "AMQP connection closed (reason: Exception (320) Reason: \\\"CONNECTION_FORCED - closed via management plugin\\\")")
	f.So(connector.Close(), should.BeNil)
	f.So(f.h.dialer.last().closeCalls, should.Equal, 0) // forgotten once closed
}

func (f *ConnectorFixture) TestAConnectionClosedByTheApplicationIsReportedOnce() {
	conn, _ := f.connector().Connect(context.Background())

	f.So(conn.Close(), should.BeNil)
	f.So(conn.Close(), should.BeNil)

	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened", "closed"})
	f.So(f.h.logs.String(), should.ContainSubstring, "level=DEBUG msg=\"AMQP connection closed (reason: closed by the application)\"")
}

func (f *ConnectorFixture) TestAStalledCloseSeversAtTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, func() {}, func() {
		conn, _ := f.connector().Connect(context.Background())
		raw := f.h.dialer.last()
		raw.blockClose = true
		started := time.Now()

		err := conn.Close()

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrCloseTimeout), should.BeTrue)
		f.So(raw.isSevered(), should.BeTrue)
		f.So(f.h.logs.String(), should.ContainSubstring, "AMQP connection close did not complete within [30s]; severing the connection.")
	})
}

func (f *ConnectorFixture) TestOpeningAChannelIsBounded() {
	inBubble(f.T(), f, f.Setup, func() {}, func() {
		connector := f.connector()
		defer func() { _ = connector.Close() }()
		conn, _ := connector.Connect(context.Background())
		f.h.dialer.last().blockOpen = true
		started := time.Now()

		_, err := conn.Writer(context.Background())

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrConnectTimeout), should.BeTrue)
		f.So(strings.Contains(err.Error(), "channel open"), should.BeTrue)
	})
}

func (f *ConnectorFixture) TestBlockedAndUnblockedAreReportedAndLogged() {
	_, _ = f.connector().Connect(context.Background())
	raw := f.h.dialer.last()

	raw.Block(true, "low on memory")
	f.h.monitor.await(f.T(), "blocked:low on memory")
	raw.Block(false, "")
	f.h.monitor.await(f.T(), "unblocked")

	f.So(f.h.logs.String(), should.ContainSubstring, "AMQP connection blocked by broker (reason: low on memory)")
	f.So(f.h.logs.String(), should.ContainSubstring, "level=WARN")
}

// password holds the characters that break URL parsing; escapedPassword is its
// percent-encoded form, which parses.
const (
	password        = "p#a@s:s"
	escapedPassword = "p%23a%40s%3As"
)

// leaks reports whether text holds the password, its escaped form, or a piece
// of it cut at one of its special characters.
func leaks(text string) bool {
	for _, piece := range []string{password, escapedPassword, "p#a", "a@s", "s:s", "p%23", "%40s"} {
		if strings.Contains(text, piece) {
			return true
		}
	}
	return false
}

func (f *ConnectorFixture) TestAnUnparsableAddressWithAHashInItsPasswordIsNeverPrinted() {
	_, err := f.connector(Options.Address("amqp://guest:" + password + "@127.0.0.1:5672/")).Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "amqp://guest:xxxxx@127.0.0.1:5672/ is malformed")
	f.So(err.Error(), should.ContainSubstring, "percent-encoded ('#' as %23")
	f.So(leaks(err.Error()), should.BeFalse)
	f.So(leaks(f.h.monitor.Errors()[0].Error()), should.BeFalse)
	f.So(leaks(f.h.logs.String()), should.BeFalse)
	f.So(f.h.dialer.configs, should.BeEmpty)
}

func (f *ConnectorFixture) TestAnUnparsableAddressWithoutAPasswordKeepsTheParsersDetail() {
	_, err := f.connector(Options.Address("amqp://host:notaport/")).Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, `invalid port ":notaport"`)
}

func (f *ConnectorFixture) TestADialErrorQuotingTheAddressIsMasked() {
	address := "amqp://guest:" + escapedPassword + "@127.0.0.1:5672/"
	f.h.dialer.err = fmt.Errorf("dial %s (password %s): connection refused", address, password)

	_, err := f.connector(Options.Address(address)).Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "amqp://guest:xxxxx@127.0.0.1:5672/")
	f.So(err.Error(), should.ContainSubstring, "connection refused")
	f.So(leaks(err.Error()), should.BeFalse)
	f.So(errors.Is(err, f.h.dialer.err), should.BeTrue)
	f.So(f.h.dialer.addresses[0], should.Equal, address) // the dialer still gets the real address
	f.So(leaks(f.h.monitor.Errors()[0].Error()), should.BeFalse)
}

func (f *ConnectorFixture) TestRefusedCredentialsWithAHardPasswordAreMasked() {
	f.h.dialer.err = &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED - Login was refused", Server: true}

	_, err := f.connector(Options.Address("amqp://guest:" + escapedPassword + "@127.0.0.1:5672/")).Connect(context.Background())

	f.So(err.Error(), should.ContainSubstring, "refused the credentials")
	f.So(leaks(err.Error()), should.BeFalse)
	var amqpErr *amqp.Error
	f.So(errors.As(err, &amqpErr), should.BeTrue)
	f.So(err, should.Wrap, messaging.ErrAccessRefused)
	var refused *messaging.BrokerError
	f.So(errors.As(err, &refused), should.BeTrue)
	f.So(refused.Code, should.Equal, messaging.ReplyAccessRefused)
}

func (f *ConnectorFixture) TestACloseReasonQuotingTheAddressIsMaskedInTheLog() {
	address := "amqp://guest:" + escapedPassword + "@127.0.0.1:5672/"
	connector := f.connector(Options.Address(address))
	conn, err := connector.Connect(context.Background())
	f.So(err, should.BeNil)

	f.h.dialer.last().BrokerClose("closed by " + address + " with " + password)
	f.h.monitor.await(f.T(), "closed")
	_, err = conn.Writer(context.Background())

	f.So(f.h.logs.String(), should.ContainSubstring, "AMQP connection closed")
	f.So(leaks(f.h.logs.String()), should.BeFalse)
	f.So(leaks(err.Error()), should.BeFalse)
}

const (
	nodeA = "amqp://app:pa%23ss@node-a:5672/"
	nodeB = "amqp://app:pa%23ss@node-b:5672/"
	nodeC = "amqp://app:pa%23ss@node-c:5672/"
)

func (f *ConnectorFixture) TestSeveralAddressesAreTriedInOrderUntilOneAnswers() {
	f.h.dialer.failFor = map[string]error{nodeA: errors.New("dial tcp node-a:5672: connect: connection refused")}
	connector := f.connector(Options.Addresses(nodeA, "", nodeB, nodeC))

	_, err := connector.Connect(context.Background())

	f.So(err, should.BeNil)
	f.So(f.h.dialer.addresses, should.Equal, []string{nodeA, nodeB})
	logs := f.h.logs.String()
	f.So(logs, should.ContainSubstring, "Broker address [amqp://app:xxxxx@node-a:5672/] (1 of 3) did not answer")
	f.So(logs, should.ContainSubstring, "Connected to broker address [amqp://app:xxxxx@node-b:5672/] (2 of 3).")
	f.So(logs, should.NotContainSubstring, "pa%23ss")
	f.So(logs, should.NotContainSubstring, "pa#ss")

	_, _ = connector.Connect(context.Background()) // the address that answered is tried first
	f.So(f.h.dialer.addresses[2], should.Equal, nodeB)
}

func (f *ConnectorFixture) TestALostConnectionMovesTheNextConnectToTheNextAddress() {
	connector := f.connector(Options.Addresses(nodeA, nodeB, nodeC))
	_, _ = connector.Connect(context.Background())
	f.h.dialer.last().BrokerClose("CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'")
	f.h.monitor.await(f.T(), "closed")

	_, err := connector.Connect(context.Background())

	f.So(err, should.BeNil)
	f.So(f.h.dialer.addresses, should.Equal, []string{nodeA, nodeB})
}

func (f *ConnectorFixture) TestWhenNoAddressAnswersTheErrorNamesEveryFailureMasked() {
	f.h.dialer.err = errors.New("dial tcp: connect: connection refused (amqp://app:pa#ss@somewhere)")
	connector := f.connector(Options.Addresses(nodeA, nodeB))

	_, err := connector.Connect(context.Background())

	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.StartWith, "none of the 2 broker addresses answered")
	f.So(err.Error(), should.ContainSubstring, "node-a")
	f.So(err.Error(), should.ContainSubstring, "node-b")
	f.So(err.Error(), should.NotContainSubstring, "pa#ss")
	f.So(f.h.dialer.addresses, should.HaveLength, 2)
}

func (f *ConnectorFixture) TestRefusedCredentialsAreNotTriedOnTheOtherNodes() {
	f.h.dialer.err = &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED - Login was refused"}
	connector := f.connector(Options.Addresses(nodeA, nodeB, nodeC))

	_, err := connector.Connect(context.Background())

	f.So(errors.Is(err, messaging.ErrAccessRefused), should.BeTrue)
	f.So(f.h.dialer.addresses, should.HaveLength, 1)
}

func (f *ConnectorFixture) TestAMalformedAddressAnywhereInTheListIsRefusedBeforeDialling() {
	connector := f.connector(Options.Addresses(nodeA, "amqp://app:pa#ss@node-b:5672/"))

	_, err := connector.Connect(context.Background())

	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "malformed")
	f.So(err.Error(), should.NotContainSubstring, "pa#ss")
	f.So(f.h.dialer.addresses, should.BeEmpty)
}
