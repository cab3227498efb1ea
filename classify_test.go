package messaging

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestClassifyFixture(t *testing.T) {
	gunit.Run(new(ClassifyFixture), t)
}

type ClassifyFixture struct {
	*gunit.Fixture
}

// The errors a call returns when its connection closed under it: every one
// is lost, so every caller holds the message as an outage.
func (f *ClassifyFixture) TestAConnectionThatClosedIsLostAndAnOutageForEveryCaller() {
	for _, err := range []error{
		ErrClosed,
		fmt.Errorf("publish: %w", ErrClosed),
		&BrokerError{Code: ReplyConnectionForced, Text: "CONNECTION_FORCED - Closed via management plugin"},
		&BrokerError{Code: ReplyInternalError, Text: "INTERNAL_ERROR"},
		ErrArrivalUnknown,
		ErrPublishTimeout, ErrCommitTimeout, ErrAcknowledgeTimeout, ErrCloseTimeout,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		fmt.Errorf("write: %w", syscall.EPIPE),
		io.ErrUnexpectedEOF,
		net.ErrClosed,
		&PublishError{Results: []PublishResult{{MessageID: "a", Confirmed: true, Routed: true}, {MessageID: "b", Err: ErrArrivalUnknown}}},
		fmt.Errorf("batch writer: %w; connect again: %w", &BrokerError{Code: ReplyConnectionForced}, ErrClosed),
	} {
		f.So(IsConnectionLost(err), should.BeTrue)
		f.So(IsOutage(err), should.BeTrue)
		f.So(IsFatal(err), should.BeFalse)
	}
	f.So(errors.Is(&BrokerError{Code: ReplyConnectionForced}, ErrClosed), should.BeTrue)
}

// A write refused because its connection had closed was not sent, and may be
// sent again; one whose confirm was lost, or any other failure, may have
// landed or is a verdict.
func (f *ClassifyFixture) TestAWriteOnAClosedConnectionWasNotSent() {
	for _, err := range []error{
		ErrClosed,
		fmt.Errorf("batch writer: publish 1 message(s): %w", ErrClosed),
		&BrokerError{Code: ReplyConnectionForced},
		&PublishError{Results: []PublishResult{{MessageID: "a", Err: fmt.Errorf("not published: %w", ErrClosed)}}},
	} {
		f.So(IsNotSent(err), should.BeTrue)
	}
	for _, err := range []error{
		nil,
		ErrArrivalUnknown,
		fmt.Errorf("confirm lost: %w, %w", ErrClosed, ErrArrivalUnknown),
		&PublishError{Results: []PublishResult{{MessageID: "a", Err: ErrClosed}, {MessageID: "b", Err: ErrArrivalUnknown}}},
		&PublishError{Results: []PublishResult{{MessageID: "a", Confirmed: true, Routed: true}, {MessageID: "b", Err: ErrClosed}}}, // part of it landed
		ErrUnroutable, ErrPublishTimeout, ErrPublishingPaused,
	} {
		f.So(IsNotSent(err), should.BeFalse)
	}
}

// A verdict on a message, or a connection the broker blocked, is not a lost
// connection.
func (f *ClassifyFixture) TestAVerdictOrABlockIsNotALostConnection() {
	for _, err := range []error{
		nil,
		ErrUnroutable, ErrRefused, ErrPublishingPaused,
		&FieldError{Field: "MessageID", Size: 300, Limit: 255},
		&BrokerError{Code: ReplyNotFound}, &BrokerError{Code: ReplyPreconditionFailed},
		errors.Join(ErrPublishingPaused, ErrArrivalUnknown), // written just before the block: its confirm comes later
		&PublishError{Results: []PublishResult{{MessageID: "a", Confirmed: true, Err: ErrUnroutable}}},
		errors.New("bad order"),
	} {
		f.So(IsConnectionLost(err), should.BeFalse)
	}
	f.So(IsOutage(ErrUnroutable), should.BeFalse)
	f.So(IsOutage(&BrokerError{Code: ReplyNotFound}), should.BeFalse)
	f.So(IsOutage(Fatal(ErrClosed)), should.BeFalse)
}

func (f *ClassifyFixture) TestADatabaseThatWentAwayIsLost() {
	cases := []struct {
		err  error
		lost bool
	}{
		{nil, false},
		{mysql.ErrInvalidConn, true},
		{fmt.Errorf("exec: %w", mysql.ErrInvalidConn), true},
		{&mysql.MySQLError{Number: 1053, Message: "Server shutdown in progress"}, true},
		{fmt.Errorf("insert: %w", &mysql.MySQLError{Number: 1927}), true},
		{errors.Join(errors.New("rollback"), &mysql.MySQLError{Number: 1040}), true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{&mysql.MySQLError{Number: 1406, Message: "Data too long"}, false},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{sql.ErrNoRows, false},
		{textOnly("invalid connection"), false}, // the text without the driver's type
	}
	for _, c := range cases {
		f.So(IsDatabaseLost(c.err), should.Equal, c.lost)
		if c.lost {
			f.So(IsOutage(c.err), should.BeTrue)
		}
	}
}

type textOnly string

func (t textOnly) Error() string { return string(t) }

func (f *ClassifyFixture) TestOutageOfFindsOnlyOutages() {
	down := Outage(errors.New("database unreachable"))
	err, ok := OutageOf(down)
	f.So(ok, should.BeTrue)
	f.So(err, should.Equal, down)
	_, ok = OutageOf(fmt.Errorf("update: %w", mysql.ErrInvalidConn))
	f.So(ok, should.BeTrue)
	for _, value := range []any{errors.New("bad order"), "database unreachable", nil, 42} {
		_, ok := OutageOf(value)
		f.So(ok, should.BeFalse)
	}
}

func (f *ClassifyFixture) TestPermanentRefusals() {
	f.So(IsPermanent(&BrokerError{Code: ReplyAccessRefused}), should.BeTrue)
	f.So(IsPermanent(fmt.Errorf("connect: %w", &BrokerError{Code: ReplyNotAllowed})), should.BeTrue)
	f.So(IsPermanent(&BrokerError{Code: ReplyNotFound}), should.BeTrue)
	f.So(IsPermanent(ErrClosed), should.BeFalse)
	f.So(IsPermanent(&BrokerError{Code: ReplyConnectionForced, Text: "CONNECTION_FORCED"}), should.BeFalse)
	f.So(IsPermanent(&BrokerError{Code: ReplyPreconditionFailed}), should.BeFalse)
	f.So(IsPermanent(errors.New("403 ACCESS_REFUSED")), should.BeFalse) // text is never classified
	f.So(IsPermanent(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), should.BeFalse)
}

// amqp091's own "channel/connection is not open" is the transport's to turn
// into ErrClosed; the root does not know the client.
func (f *ClassifyFixture) TestTheClientsNotOpenIsTheTransportsToTranslate() {
	f.So(errors.Is(amqp.ErrClosed, ErrClosed), should.BeFalse)
}
