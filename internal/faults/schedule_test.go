package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/schedule"
)

// The scheduler's scenarios: messages scheduled seconds ahead on the TTL
// ladder while the broker is disturbed (every connection closed three times,
// or the broker application stopped for 20 s). Each message is counted by id
// where it ended: delivered to its destination queue (on time, early or
// late), set aside on acemq.schedule.due.dlq, or nowhere.

// scheduleLateBound is how long after its due time (or after the broker
// answered again, for a message due while it was away) a message may arrive
// and still be on time: the smallest rung's second, a reconnect, and a busy
// machine.
const scheduleLateBound = 3 * time.Second

// scheduleEarlyBound is how much before its due time a message may arrive:
// the last hop is skipped when less than the smallest rung (a second) is left.
const scheduleEarlyBound = time.Second + 100*time.Millisecond

// Scenario: a scheduler with messages 3-75 s ahead (short: 2-12 s) while
// every connection is closed three times (short: twice). Every message
// arrives once it is due, none is set aside, none is early, none is late.
func TestFaultScheduleThroughConnectionKills(t *testing.T) {
	n, longest := size(30, 120), size(12*time.Second, 75*time.Second)
	kills := size([]time.Duration{3 * time.Second, 6 * time.Second},
		[]time.Duration{10 * time.Second, 30 * time.Second, 50 * time.Second})
	scheduleScenario(t, "schedule-connection-kills", n, longest, func(t *testing.T, sc *scheduleRun) {
		for _, at := range kills {
			sc.sleepUntil(at)
			from := time.Now()
			if err := closeAllConnections(context.Background()); err != nil {
				t.Fatalf("close every connection: %v", err)
			}
			sc.disturbed(from, time.Now())
		}
	})
}

// Scenario: the same while the broker application is stopped for 20 s
// (short: 4 s). A message due while it is away arrives within a few seconds
// of the broker answering again.
func TestFaultScheduleThroughBrokerStop(t *testing.T) {
	n, longest := size(30, 120), size(12*time.Second, 75*time.Second)
	stopAt, down := size(3*time.Second, 15*time.Second), size(4*time.Second, 20*time.Second)
	scheduleScenario(t, "schedule-broker-stop", n, longest, func(t *testing.T, sc *scheduleRun) {
		sc.sleepUntil(stopAt)
		from := time.Now()
		if _, err := rabbitmqctl(context.Background(), "stop_app"); err != nil {
			t.Fatalf("stop the broker: %v", err)
		}
		time.Sleep(down) // the outage itself: real time is what is being tested
		if _, err := rabbitmqctl(context.Background(), "start_app"); err != nil {
			t.Fatalf("start the broker: %v", err)
		}
		if !testenv.Poll(time.Minute, func() bool { return brokerAnswers(sc.url) }) {
			t.Fatalf("the broker did not answer within a minute of start_app")
		}
		sc.disturbed(from, time.Now())
	})
}

// scheduleRun is one scenario's state: when it started, the due time of each
// scheduled id, and the windows during which the broker was disturbed.
type scheduleRun struct {
	url     string
	started time.Time
	due     map[string]time.Time

	mu      sync.Mutex
	windows [][2]time.Time
}

func (sc *scheduleRun) sleepUntil(offset time.Duration) {
	time.Sleep(time.Until(sc.started.Add(offset))) // the disturbance is timed against the schedule
}

func (sc *scheduleRun) disturbed(from, to time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.windows = append(sc.windows, [2]time.Time{from, to})
}

// ready is when a message due at due can first be expected: its due time, or
// the end of a disturbance it fell into (or came due just before).
func (sc *scheduleRun) ready(due time.Time) time.Time {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ready := due
	for _, w := range sc.windows {
		if ready.After(w[0].Add(-scheduleEarlyBound)) && ready.Before(w[1]) {
			ready = w[1]
		}
	}
	return ready
}

func scheduleScenario(t *testing.T, scenario string, n int, longest time.Duration, disturb func(*testing.T, *scheduleRun)) {
	url := testenv.Disrupt(t)
	t.Cleanup(func() {
		if _, err := rabbitmqctl(context.Background(), "start_app"); err != nil {
			t.Errorf("restore the broker: %v", err)
		}
		if !testenv.Poll(time.Minute, func() bool { return brokerAnswers(url) }) {
			t.Errorf("the broker did not answer within a minute of start_app; `make services` starts it")
		}
	})
	removeScheduleLadder(t, url)
	t.Cleanup(func() { removeScheduleLadder(t, url) })
	queue := testenv.Name(t, "schedule")
	declareQueue(t, url, queue, "")
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	tl := newTally()

	connector := transport(t, url, connName)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheduler, err := schedule.New(ctx, connector, schedule.Options.Logger(logger(t)))
	if err != nil {
		t.Fatalf("start the scheduler: %v", err)
	}
	arrivals := watchArrivals(ctx, url, queue)
	sc := &scheduleRun{url: url, started: time.Now(), due: map[string]time.Time{}}
	for i, id := range ids(n) {
		due := sc.started.Add(2*time.Second + time.Duration(i)*(longest-2*time.Second)/time.Duration(max(n-1, 1)))
		tl.send(id)
		if err := scheduler.At(ctx, due, messaging.Dispatch{RoutingKey: queue, MessageID: id, Payload: []byte(id)}); err != nil {
			t.Fatalf("schedule message %d: %v", i, err)
		}
		tl.confirm(id)
		sc.due[id] = due
	}
	disturb(t, sc)
	last := sc.ready(sc.started.Add(longest))
	testenv.Poll(time.Until(last)+30*time.Second, func() bool { return arrivals.count(sc.due) == n })
	if err := scheduler.Close(); err != nil {
		t.Logf("close the scheduler: %v", err)
	}
	cancel()
	arrivals.stop()
	if err := connector.Close(); err != nil {
		t.Logf("close the connector: %v", err)
	}
	arrivals.tally(tl)
	setAside := drainIDs(t, url, wire.DeadLetterQueue(schedule.DueQueue))
	judgeSchedule(t, scenario, sc, arrivals, setAside)
	report(t, scenario, tl, sc.started)
	base.check(t)
}

// judgeSchedule fails the test for every message set aside, early or late,
// and prints the scenario's counts.
func judgeSchedule(t *testing.T, scenario string, sc *scheduleRun, arrivals *arrivalWatch, setAside map[string]int) {
	t.Helper()
	arrivals.mu.Lock()
	defer arrivals.mu.Unlock()
	var early, late, duplicated []string
	var latest time.Duration
	for id, due := range sc.due {
		at, ok := arrivals.first[id]
		if !ok {
			continue
		}
		switch ready := sc.ready(due); {
		case at.Before(due.Add(-scheduleEarlyBound)):
			early = append(early, fmt.Sprintf("%s %s early", id, due.Sub(at).Round(time.Millisecond)))
		case at.After(ready.Add(scheduleLateBound)):
			late = append(late, fmt.Sprintf("%s %s late", id, at.Sub(ready).Round(time.Millisecond)))
		}
		latest = max(latest, at.Sub(sc.ready(due)))
		if arrivals.copies[id] > 1 {
			duplicated = append(duplicated, id)
		}
	}
	sort.Strings(early)
	sort.Strings(late)
	fmt.Printf("fault %s scheduled %d delivered %d duplicated %d dead-lettered %d early %d late %d latest %s after due\n",
		scenario, len(sc.due), len(arrivals.first), len(duplicated), len(setAside), len(early), len(late), latest.Round(time.Millisecond))
	if len(setAside) > 0 {
		t.Errorf("%s: %d message(s) set aside on %s: %v", scenario, len(setAside), wire.DeadLetterQueue(schedule.DueQueue), setAside)
	}
	if len(early) > 0 {
		t.Errorf("%s: %d message(s) arrived early: %v", scenario, len(early), early)
	}
	if len(late) > 0 {
		t.Errorf("%s: %d message(s) arrived more than %s after they were due or the broker answered again: %v", scenario, len(late), scheduleLateBound, late)
	}
}

// arrivalWatch records when each message id first reached a queue, and how
// many distinct copies of it came (a copy the checker had redelivered to
// itself, after its own connection was closed, is not one).
type arrivalWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	first  map[string]time.Time
	copies map[string]int
}

// watchArrivals consumes queue with the raw client, acknowledging after it
// recorded each message, and dials again whenever its connection is closed,
// until stop.
func watchArrivals(ctx context.Context, url, queue string) *arrivalWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &arrivalWatch{cancel: cancel, done: make(chan struct{}), first: map[string]time.Time{}, copies: map[string]int{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if err := w.consume(ctx, url, queue); err != nil {
				select { // the broker is away: dial again shortly
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return w
}

func (w *arrivalWatch) consume(ctx context.Context, url, queue string) error {
	properties := amqp.NewConnectionProperties()
	properties.SetClientConnectionName(checkerName)
	conn, err := amqp.DialConfig(url, amqp.Config{Properties: properties, Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range deliveries {
		w.record(d)
		if err := d.Ack(false); err != nil {
			return err
		}
	}
	return fmt.Errorf("the consumer of %s ended", queue)
}

func (w *arrivalWatch) record(d amqp.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.first[d.MessageId]; !seen {
		w.first[d.MessageId] = time.Now()
	}
	if !d.Redelivered || w.copies[d.MessageId] == 0 {
		w.copies[d.MessageId]++
	}
}

// count returns how many of the ids in due have arrived.
func (w *arrivalWatch) count(due map[string]time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id := range due {
		if _, ok := w.first[id]; ok {
			n++
		}
	}
	return n
}

func (w *arrivalWatch) stop() {
	w.cancel()
	<-w.done
}

// tally counts every copy that arrived as handled.
func (w *arrivalWatch) tally(tl *tally) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, n := range w.copies {
		for range n {
			tl.handle(id)
		}
	}
}

// drainIDs empties queue and returns how many times each message id was in
// it. A queue that does not exist holds nothing.
func drainIDs(t *testing.T, url, queue string) map[string]int {
	t.Helper()
	conn, ch := dialChecker(t, url)
	defer func() { _ = conn.Close() }()
	found := map[string]int{}
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			var amqpErr *amqp.Error
			if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
				return found
			}
			t.Fatalf("checker: read %s: %v", queue, err)
		}
		if !ok {
			return found
		}
		found[d.MessageId]++
	}
}

// removeScheduleLadder deletes the scheduler's queues and exchange, so a
// scenario starts and ends without messages another run left on a rung.
func removeScheduleLadder(t *testing.T, url string) {
	t.Helper()
	var queues []string
	for _, r := range schedule.Rungs() {
		queues = append(queues, r.Name)
	}
	queues = append(queues, schedule.DueQueue, wire.DeadLetterQueue(schedule.DueQueue), wire.ParkedQueue(schedule.DueQueue))
	if err := testenv.DeleteTopology(url, []string{schedule.Exchange}, queues...); err != nil {
		t.Fatalf("delete the scheduler's ladder: %v", err)
	}
}
