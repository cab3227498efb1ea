package multi

import (
	"context"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestHandlerFixture(t *testing.T) {
	gunit.Run(new(HandlerFixture), t)
}

type HandlerFixture struct {
	*gunit.Fixture
	calls []string
}

type ctxKey struct{}

func (f *HandlerFixture) recorder(name string, seen *[]any, ctxSeen *any) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		f.calls = append(f.calls, name)
		*seen = messages
		*ctxSeen = ctx.Value(ctxKey{})
	})
}

func (f *HandlerFixture) TestEachHandlerGetsTheSameBatchInOrder() {
	var firstSeen, secondSeen []any
	var firstCtx, secondCtx any
	h := New(f.recorder("first", &firstSeen, &firstCtx), nil, f.recorder("second", &secondSeen, &secondCtx))
	ctx := context.WithValue(context.Background(), ctxKey{}, "marker")

	h.Handle(ctx, 1, "two", 3.0)

	f.So(f.calls, should.Equal, []string{"first", "second"})
	f.So(firstSeen, should.Equal, []any{1, "two", 3.0})
	f.So(secondSeen, should.Equal, []any{1, "two", 3.0})
	f.So(firstCtx, should.Equal, "marker")
	f.So(secondCtx, should.Equal, "marker")
}

func (f *HandlerFixture) TestAPanicStopsTheBatchAndPropagatesUnchanged() {
	var seen []any
	var ctxSeen any
	boom := messaging.HandlerFunc(func(context.Context, ...any) {
		f.calls = append(f.calls, "boom")
		panic("boom")
	})
	h := New(boom, f.recorder("after", &seen, &ctxSeen))

	f.So(func() { h.Handle(context.Background(), 1) }, should.PanicWith, "boom")
	f.So(f.calls, should.Equal, []string{"boom"})
}

func (f *HandlerFixture) TestNoHandlersIsHarmless() {
	f.So(func() { New().Handle(context.Background(), 1) }, should.NotPanic)
}
