package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq"
)

var long = flag.Bool("schedule.long", false, "add a 70 s delay to the RabbitMQ ordering test (it then takes 71 s)")

// removeLadder deletes the scheduler's queues and exchange, so a test starts
// and ends without messages another run left looping on a rung.
func removeLadder(t *testing.T, url string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	defer ch.Close()
	for _, q := range append(names(Rungs()), DueQueue, wire.DeadLetterQueue(DueQueue), wire.ParkedQueue(DueQueue)) {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			t.Fatalf("delete %s: %v", q, err)
		}
	}
	if err := ch.ExchangeDelete(Exchange, false, false); err != nil {
		t.Fatalf("delete %s: %v", Exchange, err)
	}
}

// arrivalLog records when each message id reached a queue, as the broker
// delivers it to a consumer; arrived is signalled after each arrival.
type arrivalLog struct {
	mu      sync.Mutex
	at      map[string]time.Duration
	order   []string
	types   map[string]string
	heads   map[string]amqp.Table
	arrived chan struct{}
}

func watch(t *testing.T, ctx context.Context, url, queue string, start time.Time) *arrivalLog {
	log := &arrivalLog{at: map[string]time.Duration{}, types: map[string]string{}, heads: map[string]amqp.Table{}, arrived: make(chan struct{}, 1)}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer conn.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case d, ok := <-deliveries:
				if !ok {
					return
				}
				log.record(d, time.Since(start))
			}
		}
	}()
	return log
}

func (l *arrivalLog) record(d amqp.Delivery, at time.Duration) {
	l.mu.Lock()
	if _, seen := l.at[d.MessageId]; seen {
		l.order = append(l.order, "duplicate "+d.MessageId)
	}
	l.at[d.MessageId] = at
	l.order = append(l.order, d.MessageId)
	l.types[d.MessageId] = d.Type + " " + d.ContentType
	l.heads[d.MessageId] = d.Headers
	l.mu.Unlock()
	select {
	case l.arrived <- struct{}{}:
	default: // one signal pending is enough: wait looks at every id
	}
}

func (l *arrivalLog) wait(t *testing.T, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for !l.all(ids) {
		select {
		case <-l.arrived:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("within %s only %v of %v arrived", within, l.order, ids)
		}
	}
}

func (l *arrivalLog) all(ids []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if _, ok := l.at[id]; !ok {
			return false
		}
	}
	return true
}

// TestTheLadderOnRabbitMQ runs one scheduler against the local broker:
// delays of 1 s, 3 s and 11 s (and 70 s with -schedule.long), published
// longest first, arrive within a second of their due time (the last hop is
// skipped when less than a second is left, so up to a second early) in order
// of due time; meanwhile a message due for an exchange nothing is bound to loops on
// the 10 s rung until a binding appears, then arrives once. The queues
// RabbitMQ lists afterwards carry exactly the exported plan's arguments.
//
// It deletes the ladder before and after, which would disturb another user
// of the shared rungs, so it holds the broker's exclusive lock.
func TestTheLadderOnRabbitMQ(t *testing.T) {
	url := testenv.Disrupt(t)
	removeLadder(t, url)
	t.Cleanup(func() { removeLadder(t, url) })
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	monitor := &fakeMonitor{}
	s, err := New(ctx, transport, Options.Logger(quiet), Options.Monitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	target, unbound, late := testenv.Name(t, "sched"), testenv.Name(t, "sched-x"), testenv.Name(t, "sched-late")
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, q := range []string{target, late} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		defer ch.QueueDelete(q, false, false, false)
	}
	if err := ch.ExchangeDeclare(unbound, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer ch.ExchangeDelete(unbound, false, false)

	start := time.Now()
	arrivals, lateArrival := watch(t, ctx, url, target, start), watch(t, ctx, url, late, start)
	delays := []time.Duration{11 * time.Second, 3 * time.Second, time.Second}
	if *long {
		delays = append([]time.Duration{70 * time.Second}, delays...)
	}
	var ids []string
	for _, delay := range delays {
		id := fmt.Sprint("in-", delay)
		ids = append(ids, id)
		if err := s.In(ctx, delay, messaging.Dispatch{RoutingKey: target, MessageID: id, ContentType: "text/plain", Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.In(ctx, time.Second, messaging.Dispatch{Topic: unbound, RoutingKey: "invoice.due", MessageID: "unbound"}); err != nil {
		t.Fatal(err)
	}

	// Nothing is bound yet: the unbound message is due after 1 s, reaches no
	// queue, and goes on the 10 s rung; only then is the binding made.
	testenv.Eventually(t, 4*time.Second, "the scheduler to try the unbound message", func() bool {
		return monitor.count("undelivered") >= 1
	})
	if err := ch.QueueBind(late, "invoice.due", unbound, false, nil); err != nil {
		t.Fatal(err)
	}
	bound := time.Since(start)
	lateArrival.wait(t, []string{"unbound"}, 13*time.Second)
	arrivals.wait(t, ids, delays[0]+5*time.Second)

	lateArrival.mu.Lock()
	if at := lateArrival.at["unbound"]; at < bound || at > bound+loopRung+smallest+time.Second || len(lateArrival.order) != 1 {
		t.Errorf("the unbound message arrived %v at %s, bound at %s", lateArrival.order, at, bound)
	}
	lateArrival.mu.Unlock()
	arrivals.mu.Lock()
	slices.Reverse(ids)
	if !slices.Equal(arrivals.order, ids) {
		t.Errorf("arrived %v, want %v", arrivals.order, ids)
	}
	for _, delay := range delays {
		id := fmt.Sprint("in-", delay)
		if at := arrivals.at[id]; at < delay-smallest || at > delay+smallest+500*time.Millisecond {
			t.Errorf("%s arrived after %s", id, at)
		}
		if arrivals.types[id] != MessageType+" text/plain" || len(arrivals.heads[id]) == 0 {
			t.Errorf("%s arrived as %q", id, arrivals.types[id])
		}
		for name := range arrivals.heads[id] {
			if name == HeaderExchange || name == HeaderRoutingKey || name == HeaderDueAt || name == HeaderContentType {
				t.Errorf("%s arrived with %s", id, name)
			}
		}
	}
	arrivals.mu.Unlock()
	// A message can reach its consumer before the scheduler hears the
	// broker's confirm of it, which is when Delivered counts it.
	testenv.Poll(5*time.Second, func() bool { return s.Delivered() >= uint64(len(ids)+1) })
	if s.Scheduled() != uint64(len(ids)+1) || s.Delivered() != uint64(len(ids)+1) {
		t.Errorf("scheduled %d, delivered %d", s.Scheduled(), s.Delivered())
	}
	t.Logf("hops %d, delivered %d, undelivered tries %d", s.Hops(), s.Delivered(), monitor.count("undelivered"))

	listed := testenv.Rabbitmqctl(t, "-q", "list_queues", "name", "arguments", "--formatter", "json")
	var queues []struct {
		Name      string  `json:"name"`
		Arguments [][]any `json:"arguments"`
	}
	decoder := json.NewDecoder(strings.NewReader(listed))
	decoder.UseNumber()
	if err := decoder.Decode(&queues); err != nil {
		t.Fatalf("list_queues: %v\n%s", err, listed)
	}
	broker := map[string]map[string]string{}
	for _, q := range queues {
		args := map[string]string{}
		for _, a := range q.Arguments {
			args[fmt.Sprint(a[0])] = fmt.Sprint(a[2])
		}
		broker[q.Name] = args
	}
	for _, q := range Topology().Queues {
		got, ok := broker[q.Name]
		if !ok {
			t.Errorf("RabbitMQ lists no %s", q.Name)
			continue
		}
		want := map[string]string{}
		for name, value := range q.Arguments {
			want[name] = fmt.Sprint(value)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: RabbitMQ lists %v, the plan says %v", q.Name, got, want)
		}
	}

	connection, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	declarer, _ := messaging.As[messaging.Declarer](connection)
	report, err := Topology().Check(ctx, declarer)
	if err != nil || !report.Healthy() {
		t.Fatalf("the broker does not hold the plan (%v):\n%s", err, report)
	}

	// A hop to deleted rungs: In returns the error and nothing hopped.
	for _, ttl := range []time.Duration{time.Minute, 10 * time.Second, time.Second} {
		if err := declarer.DeleteQueue(ctx, RungName(ttl)); err != nil {
			t.Fatal(err)
		}
	}
	hops := s.Hops()
	err = s.In(ctx, 70*time.Second, messaging.Dispatch{RoutingKey: target, MessageID: "nowhere"})
	if !errors.Is(err, messaging.ErrUnroutable) || s.Hops() != hops || s.Scheduled() != uint64(len(ids)+1) {
		t.Fatalf("a hop to deleted rungs: %v, hops %d then %d", err, hops, s.Hops())
	}
}
