package adapter_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

func TestSeverMakesEveryPendingUseOfTheConnectionEnd(t *testing.T) {
	url := testenv.Broker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := adapter.NewDialer().Dial(ctx, url, amqp.Config{Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("Channel: %v", err)
	}
	name := testenv.Name(t, "adapter")
	if _, err := ch.QueueDeclare(name, false, true, true, false, nil); err != nil {
		t.Fatalf("QueueDeclare: %v", err)
	}
	deliveries, err := ch.Consume(name, "adapter-test", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}

	if err := conn.Sever(); err != nil {
		t.Fatalf("Sever: %v", err)
	}

	select {
	case err := <-closes:
		if err == nil {
			t.Fatal("a severed connection reported a graceful close")
		}
	case <-time.After(30 * time.Second): // a bound a machine busy with other test programs meets
		t.Fatal("severing did not close the connection")
	}
	select {
	case _, open := <-deliveries:
		if open {
			t.Fatal("a delivery arrived on a severed connection")
		}
	case <-time.After(30 * time.Second): // a bound a machine busy with other test programs meets
		t.Fatal("the consumer's deliveries did not end")
	}
	if _, err := ch.QueueDeclare(name, false, true, true, false, nil); err == nil {
		t.Fatal("a call on a severed connection succeeded")
	}
}

func TestDialFailsOnceTheContextHasEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := adapter.NewDialer().Dial(ctx, "amqp://guest:guest@127.0.0.1:5672/", amqp.Config{})

	if err == nil {
		t.Fatal("Dial with an ended context succeeded")
	}
}
