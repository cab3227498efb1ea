package deadletter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
)

func TestCloseWaitsForTheRepublishInFlightAndRefusesLaterOnes(t *testing.T) {
	connector := &fakeConnector{commitStarted: make(chan struct{}, 1)}
	p := newPublisher(connector, newConfig(nil))
	published := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // the publish timeout
	defer cancel()
	go func() {
		published <- p.publish(ctx, messaging.Dispatch{RoutingKey: "q.dlq", MessageID: "a"})
	}()
	<-connector.commitStarted

	if err := p.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := receiveWithin(t, published, 5*time.Second, "the republish in flight"); !errors.Is(err, messaging.ErrArrivalUnknown) {
		t.Fatalf("the republish that ran out of time returned %v, want ErrArrivalUnknown (not acknowledged, redelivered)", err)
	}
	if !connector.connections[0].closed {
		t.Fatal("close must close the connection")
	}
	if err := p.publish(context.Background(), messaging.Dispatch{RoutingKey: "q.dlq", MessageID: "b"}); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("publish after close: %v, want ErrClosed", err)
	}
}

func TestAWriterGivenInTheOptionsIsSharedAndLeftToItsOwner(t *testing.T) {
	connector := &fakeConnector{}
	writer := batch.New(connector)
	defer writer.Close()
	first := New(nil, &fakeInner{}, Options.Writer(writer))
	second := New(nil, &fakeInner{}, Options.Writer(writer))
	for _, h := range []messaging.Handler{first, second} {
		if err := h.(*handler).publisher.publish(context.Background(), messaging.Dispatch{RoutingKey: "q.dlq"}); err != nil {
			t.Fatalf("publish: %v", err)
		}
		if err := h.(interface{ Close() error }).Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	if connector.connects != 1 || connector.connections[0].closed {
		t.Fatalf("%d connection(s), the first closed: %t; want one, shared and left open", connector.connects, connector.connections[0].closed)
	}
}
