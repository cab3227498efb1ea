package rabbitmq_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

func TestMalformedAddressIsAClearError(t *testing.T) {
	connector := rabbitmq.New(rabbitmq.Options.Address("http://nowhere:5672/"))
	defer func() { _ = connector.Close() }()

	_, err := connector.Connect(context.Background())

	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("Connect = %v; want an error saying the address is malformed", err)
	}
}

func TestWrongCredentialsAreAClearErrorWithoutRetrying(t *testing.T) {
	testenv.Broker(t)
	connector := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:wrong-password@127.0.0.1:5672/"))
	defer func() { _ = connector.Close() }()
	started := time.Now()

	_, err := connector.Connect(testContext(t))

	if err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Fatalf("Connect = %v; want an error saying the broker refused the credentials", err)
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("error %q reveals the password", err)
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Fatalf("Connect took %s; it should fail once, without a retry loop", elapsed)
	}
}

func TestPublishToAMissingExchangeIsAClearErrorAndANewWriterWorks(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("after-missing")
	conn := connect(t, b.url)
	w := openWriter(t, conn)
	missing := testenv.Name(t, "missing-exchange")

	_, err := w.Write(testContext(t), messaging.Dispatch{Topic: missing, RoutingKey: "k", Mandatory: true})

	if !errors.Is(err, messaging.ErrNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Write to a missing exchange = %v; want an error matching messaging.ErrNotFound that names the exchange", err)
	}
	if _, err := w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("Write on the dead channel = %v; want an error wrapping ErrClosed", err)
	}
	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true}); err != nil {
		t.Fatalf("a new writer on the same connection failed: %v", err)
	}
	if _, err := openWriter(t, connect(t, b.url)).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true}); err != nil {
		t.Fatalf("a new writer on a new connection failed: %v", err)
	}
}

func TestCloseAllConnectionsFailsTheNextCallClearlyAndAFreshConnectWorks(t *testing.T) {
	b := newBroker(t, testenv.Disrupt(t))
	queue := b.queue("severed")
	monitor := &countingMonitor{}
	connector := rabbitmq.New(rabbitmq.Options.Address(b.url), rabbitmq.Options.Monitor(monitor))
	defer func() { _ = connector.Close() }()
	conn, err := connector.Connect(testContext(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	w := openWriter(t, conn)
	if _, err := w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); err != nil {
		t.Fatalf("Write before: %v", err)
	}

	testenv.Rabbitmqctl(t, "close_all_connections", "test disruption")

	var failure error
	testenv.Eventually(t, settle, "a write failing after close_all_connections", func() bool {
		_, failure = w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue})
		return failure != nil
	})
	if !errors.Is(failure, messaging.ErrClosed) && !errors.Is(failure, messaging.ErrArrivalUnknown) {
		t.Fatalf("Write after the broker closed the connection = %v; want ErrClosed or ErrArrivalUnknown", failure)
	}
	if !strings.Contains(failure.Error(), "test disruption") && !strings.Contains(failure.Error(), "CONNECTION_FORCED") {
		t.Errorf("error %q does not carry the broker's reason", failure)
	}
	testenv.Eventually(t, settle, "ConnectionClosed", func() bool { return monitor.closed.Load() == 1 })

	fresh, err := connector.Connect(testContext(t))
	if err != nil {
		t.Fatalf("a fresh Connect failed: %v", err)
	}
	if _, err := openWriter(t, fresh).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true}); err != nil {
		t.Fatalf("Write on the fresh connection: %v", err)
	}
	if got := monitor.opened.Load(); got != 2 {
		t.Errorf("ConnectionOpened fired %d times; want 2", got)
	}
}

func TestCommitWriterPublishesNothingUntilCommit(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("commit")
	conn := connect(t, b.url)
	w, err := conn.CommitWriter(testContext(t))
	if err != nil {
		t.Fatalf("CommitWriter: %v", err)
	}
	defer func() { _ = w.Close() }()

	if _, err := w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}, messaging.Dispatch{RoutingKey: queue}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got := b.count(queue); got != 0 {
		t.Fatalf("%d messages arrived before Commit", got)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := b.count(queue); got != 2 {
		t.Fatalf("queue holds %d after Commit; want 2", got)
	}
	if _, err := w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := w.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("empty Commit: %v", err)
	}
	if got := b.count(queue); got != 2 {
		t.Fatalf("queue holds %d after a rollback; want still 2", got)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	_, _ = w.Write(testContext(t), messaging.Dispatch{RoutingKey: "nowhere-" + queue, Mandatory: true})
	if err := w.Commit(); !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("Commit of an unroutable message = %v; want ErrUnroutable", err)
	}
}

// silentListener accepts TCP connections and never answers, like a broker that
// hangs during the handshake.
func silentListener(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	var accepted []net.Conn
	go func() {
		defer close(done)
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, conn)
		}
	}()
	t.Cleanup(func() {
		_ = listener.Close()
		<-done
		for _, conn := range accepted {
			_ = conn.Close()
		}
	})
	return listener.Addr().String()
}

func TestAHandshakeThatNeverCompletesEndsAtTheBrokerTimeout(t *testing.T) {
	address := silentListener(t)
	connector := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:guest@"+address+"/"), rabbitmq.Options.BrokerTimeout(300*time.Millisecond))
	defer func() { _ = connector.Close() }()
	started := time.Now()

	_, err := connector.Connect(context.Background())

	if !errors.Is(err, rabbitmq.ErrConnectTimeout) {
		t.Fatalf("Connect to a silent listener = %v; want ErrConnectTimeout", err)
	}
	if elapsed := time.Since(started); elapsed > 3*time.Second {
		t.Fatalf("Connect returned after %s; the bound was 300ms", elapsed)
	}
}

func TestACancelledContextEndsAStalledHandshake(t *testing.T) {
	address := silentListener(t)
	connector := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:guest@" + address + "/"))
	defer func() { _ = connector.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()

	_, err := connector.Connect(ctx)

	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect = %v; want the context's error", err)
	}
	if elapsed := time.Since(started); elapsed > 3*time.Second {
		t.Fatalf("Connect returned after %s; the context ended after 200ms", elapsed)
	}
}
