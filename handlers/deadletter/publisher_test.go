package deadletter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

func TestClosingDuringARepublishCutsItOffAndSaysSo(t *testing.T) {
	connector := &fakeConnector{commitStarted: make(chan struct{}, 1)}
	p := newPublisher(connector)
	published := make(chan error, 1)
	go func() {
		published <- p.publish(context.Background(), messaging.Dispatch{RoutingKey: "q.dlq", MessageID: "a"})
	}()
	<-connector.commitStarted

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := p.close(ctx)
	if !errors.Is(err, messaging.ErrShutdownForced) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v, want ErrShutdownForced and the deadline", err)
	}
	if err := <-published; !errors.Is(err, messaging.ErrArrivalUnknown) {
		t.Fatalf("the cut-off republish returned %v, want ErrArrivalUnknown (not acknowledged, redelivered)", err)
	}
	if !connector.connections[0].closed {
		t.Fatal("a forced close must still close the connection")
	}
	if err := p.publish(context.Background(), messaging.Dispatch{RoutingKey: "q.dlq", MessageID: "b"}); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("publish after close: %v, want ErrClosed", err)
	}
}
