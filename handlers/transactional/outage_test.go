package transactional

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

func (f *HandlerFixture) TestATransactionThatCannotBeginIsAnOutage() {
	f.connector.connectErr = errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, f.connector.connectErr), should.BeTrue)

	f.connector.connectErr = nil
	f.So(f.handle(), should.BeNil)
	begin := errors.New("begin: database is down")
	f.connector.connection.writerErr = begin
	err, _ = f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, begin), should.BeTrue)
}

func (f *HandlerFixture) TestATransactionThatCannotCommitIsAnOutage() {
	f.connector.commitErr = fmt.Errorf("commit: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET})
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, f.connector.commitErr), should.BeTrue)
}

func (f *HandlerFixture) TestACommitRefusedForTheMessagesOwnContentIsNotAnOutage() {
	for _, own := range []error{
		&mysql.MySQLError{Number: 1452, Message: "a foreign key constraint fails"},
		fmt.Errorf("commit: %w", messaging.ErrRefused),
		&messaging.FieldError{Field: "MessageID", Size: 300, Limit: 255},
		&messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: messaging.ErrUnroutable}}},
		messaging.Fatalf("bad row"),
	} {
		f.Setup()
		f.connector.commitErr = own
		err, _ := f.handle().(error)
		f.So(errors.Is(err, own), should.BeTrue)
		f.So(messaging.IsOutage(err), should.BeFalse)
	}
}

func (f *HandlerFixture) TestAHandlerPanicThatSaysTheConnectionWasLostIsAnOutage() {
	lost := fmt.Errorf("update orders: %w", mysql.ErrInvalidConn)
	f.failure = lost
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, mysql.ErrInvalidConn), should.BeTrue)
	f.So(err.Error(), should.Equal, lost.Error())
	f.So(f.connector.connection.writers[0].rollbacks, should.Equal, 1)
}

func (f *HandlerFixture) TestAHandlersOwnErrorIsRepanickedUnchanged() {
	own := errors.New("quantity must be positive")
	f.failure = own
	f.So(f.handle(), should.Equal, own)
}
