package deadletter

import (
	"context"
	"errors"

	"github.com/smarty/assertions/should"
)

func (f *HandlerFixture) TestAKeptConnectionClosedSinceItsLastUseIsReplacedAndTheSetAsideLands() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("quantity must be positive")) }
	handler := f.handler(Options.MaxAttempts(1))
	handler.Handle(context.Background(), delivery("a"))
	f.connector.mu.Lock()
	f.connector.connections[0].closed = true // the broker closed it between two set-asides
	f.connector.mu.Unlock()

	handler.Handle(context.Background(), delivery("bb"))

	f.So(f.connector.connects, should.Equal, 2)
	f.So(f.connector.targets(), should.HaveLength, 2)
}

func (f *HandlerFixture) TestAFreshConnectionThatFailsIsNotTriedAgain() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("quantity must be positive")) }
	f.connector.commitErr = errors.New("lost")
	value := recovered(func() { f.handler(Options.MaxAttempts(1)).Handle(context.Background(), delivery("a")) })
	f.So(value, should.NotBeNil)
	f.So(f.connector.connects, should.Equal, 1)
}
