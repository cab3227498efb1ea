package saga_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging/patterns/saga"
)

type Order struct {
	ID       string
	Reserved bool
	Paid     bool
}

func Example() {
	placeOrder, err := saga.New("place-order", []saga.Step[*Order]{
		{
			Name: "reserve-stock",
			Do:   func(_ context.Context, o *Order) error { o.Reserved = true; return nil },
			Undo: func(_ context.Context, o *Order) error { o.Reserved = false; return nil },
		},
		{
			Name: "take-payment",
			Do:   func(_ context.Context, o *Order) error { o.Paid = true; return nil },
			Undo: func(context.Context, *Order) error { return errors.New("the payment provider is down") },
		},
		{
			Name: "confirm",
			Do:   func(context.Context, *Order) error { return errors.New("the warehouse refused") },
		},
	})
	if err != nil {
		panic(err)
	}

	order := &Order{ID: "o-1"}
	result := placeOrder.Run(context.WithoutCancel(context.Background()), order)
	fmt.Println(result.Outcome(), "at", result.Failed)
	fmt.Println("compensated:", result.Compensated)
	if result.HasUnresolved() {
		fmt.Println("alert:", result.Unresolved[0])
	}
	fmt.Println("reserved:", order.Reserved, "paid:", order.Paid)
	// Output:
	// unresolved at confirm
	// compensated: [reserve-stock]
	// alert: step "take-payment" was not undone: the payment provider is down
	// reserved: false paid: true
}
