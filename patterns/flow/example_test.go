package flow_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/flow"
)

type Order struct {
	ID    string
	Total int
}

type Reservation struct {
	Order string
	Shelf string
}

// A three-step pipeline on the memory transport: the run's last step
// reports it completed.
func ExampleNewPipeline() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	transport := memory.New()
	defer transport.Close()

	finished := make(chan flow.RunFinished, 1)
	observer := flow.RunObserverFunc(func(_ context.Context, run flow.RunFinished) { finished <- run })
	p, err := flow.NewPipeline[Order](ctx, transport, "fulfilment",
		flow.Step("validate", func(ctx context.Context, d messaging.Delivery, o Order) (Order, bool, error) {
			return o, o.Total > 0, nil
		}),
		flow.Step("reserve", func(ctx context.Context, d messaging.Delivery, o Order) (Reservation, bool, error) {
			return Reservation{Order: o.ID, Shelf: "A3"}, true, nil
		}, flow.StepOptions.DescribedAs("holds stock")),
		flow.Step("dispatch", func(ctx context.Context, d messaging.Delivery, r Reservation) (Reservation, bool, error) {
			fmt.Printf("dispatching order %s from shelf %s\n", r.Order, r.Shelf)
			return r, true, nil
		}),
		flow.Options.RunObserver(observer),
		flow.Options.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fmt.Println(p.Describe())
	if _, err := p.Send(ctx, Order{ID: "o-1", Total: 30}); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case run := <-finished:
		fmt.Println(run.Pipeline, run.Step, run.Outcome)
	case <-ctx.Done():
		fmt.Println("the run did not finish")
	}
	// Output:
	// pipeline fulfilment with 3 steps: validate | reserve (holds stock) | dispatch
	// dispatching order o-1 from shelf A3
	// fulfilment dispatch completed
}

// A step whose output type does not fit the next step's input is refused
// when the pipeline is built.
func ExampleNewPipeline_typeMismatch() {
	transport := memory.New()
	defer transport.Close()
	_, err := flow.NewPipeline[Order](context.Background(), transport, "fulfilment",
		flow.Step("reserve", func(ctx context.Context, d messaging.Delivery, o Order) (Reservation, bool, error) {
			return Reservation{}, true, nil
		}),
		flow.Step("dispatch", func(ctx context.Context, d messaging.Delivery, o Order) (Order, bool, error) {
			return o, true, nil
		}),
	)
	fmt.Println(err)
	// Output:
	// acemq: pipeline "fulfilment" step "reserve" produces flow_test.Reservation but the next step "dispatch" consumes flow_test.Order
}
