package messaging

import (
	"context"
	"slices"
	"testing"
)

func TestChainRunsTheFirstMiddlewareOutermost(t *testing.T) {
	var order []string
	named := func(name string) Middleware {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, messages ...any) {
				order = append(order, name)
				next.Handle(ctx, messages...)
			})
		}
	}
	handler := Chain(named("a"), nil, named("b"), named("c"))(HandlerFunc(func(context.Context, ...any) {
		order = append(order, "handler")
	}))
	handler.Handle(context.Background(), 1)
	if want := []string{"a", "b", "c", "handler"}; !slices.Equal(order, want) {
		t.Fatalf("order %v; want %v", order, want)
	}
}

func TestDeliveriesTravelInTheContext(t *testing.T) {
	if DeliveriesFrom(context.Background()) != nil {
		t.Fatal("a bare context carries deliveries")
	}
	deliveries := []Delivery{{MessageID: "a"}, {MessageID: "b"}}
	got := DeliveriesFrom(WithDeliveries(context.Background(), deliveries))
	if len(got) != 2 || got[1].MessageID != "b" {
		t.Fatalf("got %v", got)
	}
}
