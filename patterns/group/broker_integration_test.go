package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// tally counts handled message ids, and per member how many it handled. It
// also paces the members by what they have handled, not by how long handling
// takes: each member's first message waits until every member has one (so
// each has a share of the first quarter), and once a quarter of total is
// handled, every member but member 0 waits until member 0 is closed (so the
// others have work left to take over).
type tally struct {
	mu       sync.Mutex
	members  int
	total    int
	byID     map[string]int
	byMember map[int]int
	closed   int // the member closed, once it was
	after    int // what the closed member handled after CloseMember returned
	isClosed bool
	atClose  int           // how many messages were handled when member 0 closed
	changed  chan struct{} // told after each message handled
	allIn    chan struct{} // closed once every member handled a message
	closedCh chan struct{} // closed once member 0 is closed
}

func newTally(members, total int) *tally {
	return &tally{members: members, total: total, byID: map[string]int{}, byMember: map[int]int{}, closed: -1,
		changed: make(chan struct{}, 1), allIn: make(chan struct{}), closedCh: make(chan struct{})}
}

// closeMember records that member was closed, and lets the others go on.
func (t *tally) closeMember(member int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed, t.isClosed, t.atClose = member, true, len(t.byID)
	close(t.closedCh)
}

func (t *tally) handler(member int) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, message := range messages {
			t.mu.Lock()
			t.byID[message.(messaging.Delivery).MessageID]++
			t.byMember[member]++
			first := t.byMember[member] == 1
			if first && len(t.byMember) == t.members {
				close(t.allIn)
			}
			if t.isClosed && member == t.closed {
				t.after++
			}
			hold := member != 0 && !t.isClosed && len(t.byID) >= t.total/4
			t.mu.Unlock()
			select {
			case t.changed <- struct{}{}:
			default:
			}
			if first {
				t.await(ctx, t.allIn)
			}
			if hold {
				t.await(ctx, t.closedCh)
			}
		}
	})
}

// await waits for event, at most 30 s or until the member is shut down; a
// member that waited in vain shows in the test's counts.
func (t *tally) await(ctx context.Context, event <-chan struct{}) {
	select {
	case <-event:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
}

func (t *tally) handled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

func startGroup(t *testing.T, url, queue, exchange string, n int, tl *tally) *Group {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := NewEach(ctx, transport, queue, n, tl.handler, Options.Logger(quiet), Options.Subscription(
		streaming.SubscriptionOptions.Topics(exchange),
		streaming.SubscriptionOptions.FullDeliveryToHandler(true),
		streaming.SubscriptionOptions.BufferCapacity(20),
		streaming.SubscriptionOptions.ShutdownStrategy(streaming.ShutdownStrategyImmediate, 5*time.Second),
	))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func publish(t *testing.T, url, exchange string, total int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	dispatches := make([]messaging.Dispatch, total)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{Topic: exchange, MessageID: fmt.Sprint("g-", i), MessageType: "grouped", Mandatory: true, Payload: []byte("{}")}
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits, at most a minute, for n messages to be handled.
func (tl *tally) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for tl.handled() < n {
		select {
		case <-tl.changed:
		case <-deadline.C:
			t.Fatalf("%d of %d messages handled within a minute", tl.handled(), n)
		}
	}
}

// TestFourMembersShareAQueueAndTakeOverFromOneThatCloses: 1,000 messages to
// a queue consumed by a group of four; once a quarter are handled, member 0
// is closed. Every message is handled exactly once, every member handled a
// share before, and member 0 nothing after it closed: the other three
// handled what it had prefetched and the rest.
func TestFourMembersShareAQueueAndTakeOverFromOneThatCloses(t *testing.T) {
	url := testenv.Broker(t)
	const total, members = 1000, 4
	queue, exchange := testenv.Name(t, "group"), testenv.Name(t, "group-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })
	tl := newTally(members, total)
	g := startGroup(t, url, queue, exchange, members, tl)
	publish(t, url, exchange, total)

	tl.waitFor(t, total/4)
	tl.mu.Lock()
	before := map[int]int{}
	for m, n := range tl.byMember {
		before[m] = n
	}
	tl.mu.Unlock()
	if err := g.CloseMember(0); err != nil {
		t.Fatal(err)
	}
	tl.closeMember(0)
	tl.waitFor(t, total)
	// Every member stops and hands back what it held: a duplicate still on
	// its way would be left in the queue.
	if err := g.Close(); err != nil {
		t.Fatalf("close the group: %v", err)
	}
	listed := testenv.Rabbitmqctl(t, "-q", "list_queues", "name", "messages", "--no-table-headers")
	if !slices.Contains(strings.Split(listed, "\n"), queue+"\t0") {
		t.Errorf("%s is not listed empty once the group closed: a duplicate was on its way\n%s", queue, listed)
	}

	tl.mu.Lock()
	defer tl.mu.Unlock()
	t.Logf("handled per member before member 0 closed %v, in all %v; %d of %d handled when it closed", before, tl.byMember, tl.atClose, total)
	for i := range total {
		if n := tl.byID[fmt.Sprint("g-", i)]; n != 1 {
			t.Errorf("g-%d handled %d times; want once", i, n)
		}
	}
	for m := range members {
		if before[m] == 0 {
			t.Errorf("member %d handled nothing of the first quarter; the broker should share the queue", m)
		}
	}
	if tl.after != 0 {
		t.Errorf("member 0 handled %d messages after it was closed", tl.after)
	}
	if tl.atClose >= total {
		t.Errorf("all %d messages were handled before member 0 closed; the others had nothing to take over", total)
	}
}

// TestAGroupOnAMissingQueueFailsWithTheBrokersAnswer: without declaring
// topology, the queue does not exist: New returns messaging.ErrNotFound and
// leaves no consumer behind.
func TestAGroupOnAMissingQueueFailsWithTheBrokersAnswer(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "group-missing")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nop := messaging.HandlerFunc(func(context.Context, ...any) {})
	g, err := New(ctx, transport, queue, 4, nop, Options.Logger(quiet),
		Options.Subscription(streaming.SubscriptionOptions.EstablishTopology(false), streaming.SubscriptionOptions.DeadLetters(false)))
	if g != nil || !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("New = %v, %v; want no group and messaging.ErrNotFound", g, err)
	}
}
