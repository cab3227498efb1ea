package streaming_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/streaming"
)

// memoryQueue returns a memory broker, closed when the test ends, whose
// durable queue holds count messages of type "t", the i-th with the id and
// the payload prefix+i.
func memoryQueue(t *testing.T, queue, prefix string, count int) *memory.Broker {
	t.Helper()
	broker := memory.New()
	t.Cleanup(func() { _ = broker.Close() })
	if err := broker.DeclareQueue(queue, memory.QueueOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	for i := range count {
		id := fmt.Sprint(prefix, i)
		if err := broker.Publish(context.Background(), messaging.Dispatch{MessageID: id, MessageType: "t", RoutingKey: queue, Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	return broker
}

// listen runs consumer until the test ends, then closes it and waits for
// its Listen to return (the consumer bounds that by its shutdown timeout).
func listen(t *testing.T, consumer *streaming.Consumer) {
	listened := make(chan struct{})
	go func() { consumer.Listen(); close(listened) }()
	t.Cleanup(func() { _ = consumer.Close(); <-listened })
}
