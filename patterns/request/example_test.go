package request_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/request"
)

type quoteRequest struct {
	SKU string `json:"sku"`
}

type quote struct {
	Cents int `json:"cents"`
}

// A responder on "prices" and a requester asking it, on the memory transport:
// an answer, and a responder's error returned as the specified error text.
func ExampleNewRequester() {
	broker := memory.New()
	defer broker.Close()
	ctx := context.Background()
	quiet := request.Options.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))

	server, err := request.Serve(ctx, broker, "prices", func(_ context.Context, _ messaging.Delivery, r quoteRequest) (quote, error) {
		if r.SKU == "" {
			return quote{}, errors.New("a SKU is required")
		}
		return quote{Cents: 1299}, nil
	}, quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()
	prices, err := request.NewRequester[quoteRequest, quote](ctx, broker, "", "prices", quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer prices.Close()

	answer, err := prices.Do(ctx, quoteRequest{SKU: "book"})
	fmt.Println(answer.Cents, err)
	_, err = prices.Do(ctx, quoteRequest{})
	fmt.Println(err)
	// Output:
	// 1299 <nil>
	// acemq: the responder failed: a SKU is required
}
