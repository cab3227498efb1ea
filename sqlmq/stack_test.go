package sqlmq

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/serialization"
)

// The composition smarty/messaging v4 documents: serialization over the outbox, transactional
// over serialization. The handler's row and its event commit together.
func TestStackFixture(t *testing.T) {
	gunit.Run(new(StackFixture), t)
}

type StackFixture struct {
	*gunit.Fixture
	t       *testing.T // the bubble's
	h       *harness
	handler messaging.Handler
	fail    error
}

type orderShipped struct{ OrderID uint64 }

// run runs test in a bubble, with the stack over a fresh SQLite database.
func (f *StackFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.setup()
		test()
	})
}

func (f *StackFixture) setup() {
	f.h = newHarness(f.t, openSQLite(f.t))
	_, err := f.h.db.Exec("CREATE TABLE orders (id INTEGER NOT NULL)")
	f.So(err, should.BeNil)
	encoded := serialization.New(f.h.connector,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(orderShipped{}): "order-shipped"}))
	f.handler = transactional.New(encoded, func(state transactional.State) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, m := range messages {
				if _, err := state.Tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", m.(uint64)); err != nil {
					panic(err)
				}
				if _, err := state.Writer.Write(ctx, messaging.Dispatch{Message: orderShipped{OrderID: m.(uint64)}}); err != nil {
					panic(err)
				}
			}
			if f.fail != nil {
				panic(f.fail)
			}
		})
	})
}

func (f *StackFixture) TestAHandledBatchCommitsItsRowsAndPublishesItsEncodedEvents() {
	f.run(func() {
		f.h.Listen()
		f.handler.Handle(context.Background(), uint64(1), uint64(2))
		f.h.monitor.AwaitConfirmed(f.t, 2)
		f.So(f.h.countIn("orders"), should.Equal, 2)
		published := f.h.publisher.Next(f.t)
		f.So(published[0].MessageType, should.Equal, "order-shipped")
		f.So(published[0].Topic, should.Equal, "order-shipped")
		f.So(string(published[0].Payload), should.Equal, `{"OrderID":1}`)
	})
}

func (f *StackFixture) TestAFailedBatchLeavesNeitherRowsNorEvents() {
	f.run(func() {
		f.fail = errors.New("the handler failed")
		f.So(func() { f.handler.Handle(context.Background(), uint64(1)) }, should.Panic)
		f.So(f.h.countIn("orders"), should.Equal, 0)
		f.So(f.h.count("1=1"), should.Equal, 0)
	})
}
