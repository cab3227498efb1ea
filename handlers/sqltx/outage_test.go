package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

func (f *SQLiteFixture) TestATransactionThatCannotBeginIsAnOutage() {
	_ = f.db.Close()
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(err.Error(), should.StartWith, "sqltx: begin the batch's transaction: ")
}

func (f *SQLiteFixture) TestACommitFailureAfterTheContextEndedIsNotAnOutage() {
	handler := New(f.db, func(tx *sql.Tx) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, _ ...any) { f.cancel() })
	})
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		handler.Handle(f.ctx, 1)
	}()
	err, _ := recovered.(error)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(messaging.IsOutage(err), should.BeFalse)
}

func (f *SQLiteFixture) TestAHandlerPanicThatSaysTheConnectionWasLostIsAnOutage() {
	f.failure = fmt.Errorf("update: %w", mysql.ErrInvalidConn)
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, mysql.ErrInvalidConn), should.BeTrue)
	f.So(f.rows(), should.Equal, 0)
}

func (f *SQLiteFixture) TestAHandlersOwnErrorIsRepanickedUnchanged() {
	own := errors.New("quantity must be positive")
	f.failure = own
	f.So(f.handle(), should.Equal, own)
}
