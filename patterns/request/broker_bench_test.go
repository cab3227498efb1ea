package request

import (
	"context"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// BenchmarkBrokerDo asks one question at a time through Serve and a
// Requester on the local RabbitMQ: the allocations per call (-benchmem) and,
// with -memprofile or -cpuprofile, where they go. cmd/bench's request
// scenario compares the same round trip with the raw client.
func BenchmarkBrokerDo(b *testing.B) {
	url := testenv.Broker(b)
	queue := testenv.Name(b, "bench-prices")
	b.Cleanup(func() { _ = testenv.DeleteTopology(url, nil, queue, queue+".dlq", queue+".parked") })
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	echo := func(_ context.Context, _ messaging.Delivery, r priceRequest) (priceResponse, error) {
		return priceResponse{SKU: r.SKU}, nil
	}
	server, err := Serve(ctx, transport, queue, echo, Options.Logger(quiet),
		Options.Subscription(streaming.SubscriptionOptions.DeadLetters(false)))
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	requester, err := NewRequester[priceRequest, priceResponse](ctx, transport, "", queue, Options.Logger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	defer requester.Close()
	if _, err := requester.Do(ctx, priceRequest{SKU: "warm-up"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := requester.Do(ctx, priceRequest{SKU: "sku"}); err != nil {
			b.Fatal(err)
		}
	}
}
