package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// sharingConnector is a connector with Options.ShareConnections whose
// connections carry name, closed when the test ends.
func sharingConnector(t *testing.T, url, name string, options ...rabbitmq.Option) messaging.Connector {
	t.Helper()
	connector := rabbitmq.New(append([]rabbitmq.Option{rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(10 * time.Second),
		rabbitmq.Options.ConnectionName(name), rabbitmq.Options.ShareConnections(true)}, options...)...)
	t.Cleanup(func() { _ = connector.Close() })
	return connector
}

// brokerConnections are the broker's process ids of the connections that
// carry the connection_name name (what rabbitmqctl close_connection takes),
// sorted.
func brokerConnections(t *testing.T, name string) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(testenv.Rabbitmqctl(t, "-q", "list_connections", "pid", "client_properties"), "\n") {
		if strings.Contains(line, `{"connection_name","`+name+`"}`) {
			names = append(names, strings.TrimSpace(strings.SplitN(line, "\t", 2)[0]))
		}
	}
	slices.Sort(names)
	return names
}

func mustConnect(t *testing.T, ctx context.Context, connector messaging.Connector) messaging.Connection {
	t.Helper()
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

func mustStream(t *testing.T, ctx context.Context, conn messaging.Connection, queue string) messaging.Stream {
	t.Helper()
	reader, err := conn.Reader(ctx)
	if err != nil {
		t.Fatalf("open reader: %v", err)
	}
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, BufferCapacity: 4})
	if err != nil {
		t.Fatalf("open stream on %s: %v", queue, err)
	}
	return stream
}

func readPayload(t *testing.T, ctx context.Context, stream messaging.Stream) string {
	t.Helper()
	var d messaging.Delivery
	if err := stream.Read(ctx, &d); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := stream.Acknowledge(ctx, d); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}
	return string(d.Payload)
}

// Five connections of a sharing connector, each with a writer, a commit
// writer and a stream, are channels of two AMQP connections: one publishing,
// one consuming. Each handle's Close closes only its own channels; the last
// one closes the two connections.
func TestTheHandlesOfASharingConnectorAreChannelsOfTwoConnections(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	name := testenv.Name(t, "shared")
	connector := sharingConnector(t, url, name)
	ctx := testContext(t)

	const handles = 5
	queues := make([]string, handles)
	for i := range queues {
		queues[i] = b.queue("shared")
	}
	conns := make([]messaging.Connection, handles)
	streams := make([]messaging.Stream, handles)
	for i := range conns {
		conns[i] = mustConnect(t, ctx, connector)
		streams[i] = mustStream(t, ctx, conns[i], queues[i])
	}
	for i, conn := range conns {
		next := queues[(i+1)%handles]
		writer := openWriter(t, conn)
		if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: next, Payload: []byte(fmt.Sprintf("write %d", i)), Mandatory: true}); err != nil {
			t.Fatalf("write through handle %d: %v", i, err)
		}
		commit, err := conn.CommitWriter(ctx)
		if err != nil {
			t.Fatalf("open commit writer %d: %v", i, err)
		}
		if _, err := commit.Write(ctx, messaging.Dispatch{RoutingKey: next, Payload: []byte(fmt.Sprintf("commit %d", i)), Mandatory: true}); err != nil {
			t.Fatalf("buffer through commit writer %d: %v", i, err)
		}
		if err := commit.Commit(); err != nil {
			t.Fatalf("commit through handle %d: %v", i, err)
		}
	}
	for i, stream := range streams {
		from := (i + handles - 1) % handles
		got := []string{readPayload(t, ctx, stream), readPayload(t, ctx, stream)}
		slices.Sort(got)
		if want := []string{fmt.Sprintf("commit %d", from), fmt.Sprintf("write %d", from)}; !slices.Equal(got, want) {
			t.Fatalf("stream %d read %q; want %q", i, got, want)
		}
	}
	if open := brokerConnections(t, name); len(open) != 2 {
		t.Fatalf("%d handles, each with a writer, a commit writer and a stream, hold %d connections %v; want 2", handles, len(open), open)
	}

	for i, conn := range conns[:handles-1] {
		if err := conn.Close(); err != nil {
			t.Fatalf("close handle %d: %v", i, err)
		}
	}
	last := conns[handles-1]
	if _, err := last.Writer(ctx); err != nil {
		t.Fatalf("the last handle opens a writer after the others closed: %v", err)
	}
	if open := brokerConnections(t, name); len(open) != 2 {
		t.Fatalf("with one handle left open the connector holds %v; want its two connections", open)
	}
	if err := last.Close(); err != nil {
		t.Fatalf("close the last handle: %v", err)
	}
	testenv.Eventually(t, settle, "the shared connections closed with the last handle", func() bool {
		return len(brokerConnections(t, name)) == 0
	})
}

// A channel-level refusal on a shared connection (a publish to a missing
// exchange: 404; a passive declare of a missing queue: 404; a declaration
// that differs: 406) closes that one channel: the other handles' writers and
// streams go on, on the very same two connections.
func TestAChannelErrorOnASharedConnectionDisturbsNoOtherChannel(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	name := testenv.Name(t, "shared-refusal")
	connector := sharingConnector(t, url, name)
	ctx := testContext(t)
	queue := b.queue("shared-refusal")

	failing, going := mustConnect(t, ctx, connector), mustConnect(t, ctx, connector)
	stream := mustStream(t, ctx, going, queue)
	writer := openWriter(t, going)
	refused := openWriter(t, failing)
	send := func(payload string) {
		t.Helper()
		if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Payload: []byte(payload), Mandatory: true}); err != nil {
			t.Fatalf("write %q beside the refusals: %v", payload, err)
		}
	}
	send("before")
	if got := readPayload(t, ctx, stream); got != "before" {
		t.Fatalf("read %q; want before", got)
	}
	before := brokerConnections(t, name)

	missing := testenv.Name(t, "missing")
	if _, err := refused.Write(ctx, messaging.Dispatch{Topic: missing, Payload: []byte("x"), Mandatory: true}); !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("publish to a missing exchange: %v; want messaging.ErrNotFound", err)
	}
	declarer, ok := messaging.As[messaging.Declarer](failing)
	if !ok {
		t.Fatalf("the shared connection %T declares nothing", failing)
	}
	if _, err := declarer.InspectQueue(ctx, missing); !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("inspect a missing queue: %v; want messaging.ErrNotFound", err)
	}
	if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: queue, Durable: false}); !errors.Is(err, messaging.ErrPreconditionFailed) {
		t.Fatalf("declare a durable queue as transient: %v; want messaging.ErrPreconditionFailed", err)
	}

	send("after")
	if got := readPayload(t, ctx, stream); got != "after" {
		t.Fatalf("read %q; want after", got)
	}
	again, err := failing.Writer(ctx)
	if err != nil {
		t.Fatalf("open a writer on the refused handle: %v", err)
	}
	defer again.Close()
	if _, err := again.Write(ctx, messaging.Dispatch{RoutingKey: queue, Payload: []byte("again"), Mandatory: true}); err != nil {
		t.Fatalf("write through a new writer of the refused handle: %v", err)
	}
	if got := readPayload(t, ctx, stream); got != "again" {
		t.Fatalf("read %q; want again", got)
	}
	if after := brokerConnections(t, name); !slices.Equal(before, after) || len(after) != 2 {
		t.Fatalf("the connections were %v before the refusals and %v after; want the same two", before, after)
	}
}

// When the broker closes both shared connections under four publishers and a
// consumer, every one of them fails over to one new publishing and one new
// consuming connection (one dial each, however many users were on them), and
// every message published is consumed: counted by id.
func TestSharedConnectionsClosedByTheBrokerAreRedialledOnceAndLoseNothing(t *testing.T) {
	url := testenv.Disrupt(t)
	b := newBroker(t, url)
	name := testenv.Name(t, "shared-redial")
	monitor := &countingMonitor{}
	connector := sharingConnector(t, url, name, rabbitmq.Options.Monitor(monitor))
	queue := b.queue("shared-redial")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const publishers, after = 4, 100
	consumed := newIDSet()
	consumerDone := make(chan struct{})
	go func() { defer close(consumerDone); consume(ctx, connector, queue, consumed) }()

	published := newIDSet()
	closed := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- publish(ctx, connector, queue, p, closed, after, published)
		}()
	}
	testenv.Eventually(t, settle, "a first run of messages published and consumed", func() bool {
		return published.len() >= publishers*after && consumed.len() >= publishers*after/2
	})
	open := brokerConnections(t, name)
	if len(open) != 2 {
		t.Fatalf("four publishers and a consumer hold %v; want two connections", open)
	}
	for _, conn := range open {
		testenv.Rabbitmqctl(t, "close_connection", conn, "test: a shared connection closed under its users")
	}
	close(closed)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, settle, "every published message consumed", func() bool { return consumed.len() >= published.len() })
	cancel()
	<-consumerDone

	if missing := published.missingFrom(consumed); len(missing) > 0 {
		t.Fatalf("%d of %d messages were published and never consumed, such as %s", len(missing), published.len(), missing[0])
	}
	if opened := monitor.opened.Load(); opened != 4 {
		t.Fatalf("%d dials; want 4: the two shared connections, then one new one of each", opened)
	}
	if now := brokerConnections(t, name); len(now) > 2 || slices.Contains(now, open[0]) || slices.Contains(now, open[1]) {
		t.Fatalf("after the close the connector holds %v (before it %v); want at most two new ones", now, open)
	}
	t.Logf("%d messages published by %d publishers, every one consumed, across the close of both shared connections", published.len(), publishers)
}

// publish writes messages with ids p-0, p-1, ... through a batch writer over
// connector until closed is closed, then after more, writing a message again
// until it lands: a message whose arrival was unknown may be consumed twice,
// never lost. It records the id of each that landed.
func publish(ctx context.Context, connector messaging.Connector, queue string, p int, closed <-chan struct{}, after int, published *idSet) error {
	writer := batch.New(connector)
	defer writer.Close()
	last := -1 // the last id to publish, once closed is seen
	for i := 0; last < 0 || i <= last; i++ {
		id := fmt.Sprintf("%d-%d", p, i)
		for {
			_, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, MessageID: id, Payload: []byte(id), Mandatory: true})
			if err == nil {
				break
			}
			if ctx.Err() != nil || !messaging.IsOutage(err) {
				return fmt.Errorf("publish %s: %w", id, err)
			}
		}
		published.add(id)
		if last < 0 {
			select {
			case <-closed:
				last = i + after
			default:
			}
		}
	}
	return nil
}

// consume reads queue through connector until ctx ends, recording each id
// it acknowledged, and connects again whenever its stream fails.
func consume(ctx context.Context, connector messaging.Connector, queue string, consumed *idSet) {
	for ctx.Err() == nil {
		_ = consumeOnce(ctx, connector, queue, consumed)
	}
}

func consumeOnce(ctx context.Context, connector messaging.Connector, queue string, consumed *idSet) error {
	conn, err := connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	reader, err := conn.Reader(ctx)
	if err != nil {
		return err
	}
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, BufferCapacity: 32})
	if err != nil {
		return err
	}
	for {
		var d messaging.Delivery
		if err := stream.Read(ctx, &d); err != nil {
			return err
		}
		if err := stream.Acknowledge(ctx, d); err != nil {
			return err
		}
		consumed.add(d.MessageID)
	}
}

// idSet is a set of message ids safe for concurrent use.
type idSet struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func newIDSet() *idSet { return &idSet{ids: map[string]struct{}{}} }

func (s *idSet) add(id string) {
	s.mu.Lock()
	s.ids[id] = struct{}{}
	s.mu.Unlock()
}

func (s *idSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// missingFrom are the ids of s that other lacks.
func (s *idSet) missingFrom(other *idSet) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	var missing []string
	for id := range s.ids {
		if _, ok := other.ids[id]; !ok {
			missing = append(missing, id)
		}
	}
	return missing
}
