package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

func TestHealthyBrokerAnswersNil(t *testing.T) {
	url := testenv.Broker(t)
	transport := rabbitmq.New(rabbitmq.Options.Address(url))
	defer transport.Close()
	checker := New(Options.Connector(transport))
	defer checker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		if err := checker.Status(ctx); err != nil {
			t.Fatalf("healthy broker: %v", err)
		}
	}
}

func TestProbeToAMissingExchangeFailsAtOnce(t *testing.T) {
	url := testenv.Broker(t)
	transport := rabbitmq.New(rabbitmq.Options.Address(url))
	defer transport.Close()
	checker := New(Options.Connector(transport), Options.Topic(testenv.Name(t, "missing-exchange")))
	defer checker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := time.Now()
	err := checker.Status(ctx) // first failure: inside the window, yet reported
	if err == nil {
		t.Fatal("a probe to a missing exchange should fail at once, not be tolerated")
	}
	if !strings.Contains(err.Error(), "404") && !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Fatalf("want a NOT_FOUND (404) error, got %v", err)
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Fatalf("took %s", elapsed)
	}
}

func TestMemoryAlarmFailsAfterTheWindowAndRecovers(t *testing.T) {
	url := testenv.Disrupt(t)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(2*time.Second))
	defer transport.Close()
	checker := New(Options.Connector(transport), Options.FailureTolerance(500*time.Millisecond))
	defer checker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := checker.Status(ctx); err != nil {
		t.Fatalf("before the alarm: %v", err)
	}

	t.Cleanup(func() { testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4") })
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.000001")

	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		probeCtx, probeCancel := context.WithTimeout(ctx, 3*time.Second)
		err = checker.Status(probeCtx)
		probeCancel()
		if err != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling a real broker's alarm, not racing a fake clock
	}
	if err == nil {
		t.Fatal("the probe kept passing during a memory alarm past the failure window")
	}
	if !errors.Is(err, messaging.ErrPublishingPaused) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, messaging.ErrCommitTimeout) {
		t.Logf("failure during the alarm: %v", err)
	}

	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		probeCtx, probeCancel := context.WithTimeout(ctx, 3*time.Second)
		err = checker.Status(probeCtx)
		probeCancel()
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the probe did not recover after the alarm cleared: %v", err)
}

func TestWrongCredentialsFailAtOnce(t *testing.T) {
	testenv.Broker(t)
	transport := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:wrong-password@127.0.0.1:5672/"))
	defer transport.Close()
	checker := New(Options.Connector(transport))
	defer checker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := checker.Status(ctx)
	if !errors.Is(err, messaging.ErrAccessRefused) || !messaging.IsPermanent(err) {
		t.Fatalf("want a credentials refusal matching messaging.ErrAccessRefused at once, got %v", err)
	}
}
