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

// TestMemoryAlarmFailsAfterTheWindowAndRecovers raises a memory alarm and
// observes it through the broker's own notification: the probe's connection
// is blocked (connection.blocked, "low on memory"), the probes fail as paused
// past the failure window, and once the alarm is cleared the connection is
// unblocked and the probes pass again. The broker lock is held exclusively
// only while the alarm is up; the probes before and after share it.
func TestMemoryAlarmFailsAfterTheWindowAndRecovers(t *testing.T) {
	blocks := newBlockWatcher()
	transport := rabbitmq.New(rabbitmq.Options.Address(testenv.AMQPURL), rabbitmq.Options.BrokerTimeout(2*time.Second),
		rabbitmq.Options.Monitor(blocks))
	defer transport.Close()
	checker := New(Options.Connector(transport), Options.FailureTolerance(500*time.Millisecond))
	defer checker.Close()

	passes := t.Run("BeforeTheAlarm", func(t *testing.T) {
		testenv.Broker(t)
		awaitProbe(t, checker, "a probe to pass before the alarm", func(err error) bool { return err == nil })
	}) && t.Run("DuringTheAlarm", func(t *testing.T) {
		testenv.Disrupt(t)
		t.Cleanup(func() { testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4") })
		testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.000001")
		// The broker blocks a connection when it next publishes: probe until it does.
		reason := awaitEvent(t, checker, blocks.blocked, "the broker to block the probe's connection after the memory watermark was lowered")
		if !strings.Contains(reason, "memory") {
			t.Fatalf("the probe's connection was blocked for %q; want the memory alarm this test raised", reason)
		}
		err := awaitProbe(t, checker, "the probes to fail past the 500ms window", func(err error) bool { return err != nil })
		if !errors.Is(err, messaging.ErrPublishingPaused) {
			t.Fatalf("during the memory alarm the probe failed with %v; want messaging.ErrPublishingPaused, the alarm's", err)
		}
		testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
		select {
		case <-blocks.unblocked:
		case <-time.After(alarmBound):
			t.Fatalf("the broker did not unblock the probe's connection within %s of the watermark's reset", alarmBound)
		}
	}) && t.Run("AfterTheAlarm", func(t *testing.T) {
		testenv.Broker(t)
		awaitProbe(t, checker, "the probe to pass again after the alarm cleared", func(err error) bool { return err == nil })
	})
	if !passes {
		t.Fatal("the memory alarm was not seen and recovered from (see the subtests)")
	}
}

// alarmBound bounds each wait on the broker during the alarm test: the
// broker's memory monitor, the CLI and the probes all run slower on a machine
// that other test programs keep busy.
const alarmBound = time.Minute

// probePace is the pause between two probes of one wait.
const probePace = 100 * time.Millisecond

// awaitProbe probes until done accepts a probe's result and returns it,
// failing the test, saying what it waited for and the last result, after
// alarmBound.
func awaitProbe(t *testing.T, checker *Checker, what string, done func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(alarmBound)
	pace := time.NewTicker(probePace)
	defer pace.Stop()
	for {
		err := probeOnce(checker)
		if done(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; the last probe answered %v", alarmBound, what, err)
		}
		<-pace.C
	}
}

// awaitEvent probes until events delivers, and returns what it delivered,
// failing the test after alarmBound.
func awaitEvent(t *testing.T, checker *Checker, events <-chan string, what string) string {
	t.Helper()
	timeout := time.After(alarmBound)
	pace := time.NewTicker(probePace)
	defer pace.Stop()
	var err error
	for {
		select {
		case event := <-events:
			return event
		case <-timeout:
			t.Fatalf("waited %s for %s; the last probe answered %v", alarmBound, what, err)
		case <-pace.C:
			err = probeOnce(checker)
		}
	}
}

// probeOnce runs one Status within a little more than the broker timeout.
func probeOnce(checker *Checker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return checker.Status(ctx)
}

// blockWatcher hears the broker's connection.blocked and connection.unblocked.
type blockWatcher struct {
	rabbitmq.NopMonitor
	blocked   chan string
	unblocked chan struct{}
}

func newBlockWatcher() *blockWatcher {
	return &blockWatcher{blocked: make(chan string, 16), unblocked: make(chan struct{}, 16)}
}

func (w *blockWatcher) ConnectionBlocked(reason string) {
	select {
	case w.blocked <- reason:
	default:
	}
}

func (w *blockWatcher) ConnectionUnblocked() {
	select {
	case w.unblocked <- struct{}{}:
	default:
	}
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
