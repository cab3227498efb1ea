package schedule

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
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/memory"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// bubble runs test inside a synctest bubble with a memory broker, a queue
// "target" and a scheduler over them; the scheduler and the broker are
// closed when test returns.
func bubble(t *testing.T, test func(t *testing.T, broker *memory.Broker, s *Scheduler, monitor *fakeMonitor)) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		if err := broker.DeclareQueue("target", memory.QueueOptions{Durable: true}); err != nil {
			t.Fatal(err)
		}
		monitor := &fakeMonitor{}
		s, err := New(context.Background(), broker, Options.Logger(quiet), Options.Monitor(monitor))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}()
		test(t, broker, s, monitor)
	})
}

// arrivals pulls queue every 50 ms of the bubble's clock for the given
// time (each pull also lets the memory broker expire what is due), and returns each message id with when it arrived (measured from
// the start) and the delivery.
func arrivals(broker *memory.Broker, queue string, start time.Time, watch time.Duration) (map[string]time.Duration, map[string]messaging.Delivery, []string) {
	at, got := map[string]time.Duration{}, map[string]messaging.Delivery{}
	var order []string
	for end := time.Now().Add(watch); time.Now().Before(end); {
		for {
			d, ok := broker.Pull(queue)
			if !ok {
				break
			}
			at[d.MessageID] = time.Since(start)
			got[d.MessageID] = d
			order = append(order, d.MessageID)
		}
		time.Sleep(50 * time.Millisecond) // the bubble's clock
	}
	return at, got, order
}

func TestDelaysArriveWithinTheSmallestRungInOrderOfDueTime(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, monitor *fakeMonitor) {
		ctx := context.Background()
		start := time.Now()
		// Published longest first: the 70 s message must not hold back the 1 s one.
		delays := []time.Duration{70 * time.Second, 11 * time.Second, 3 * time.Second, time.Second}
		for _, delay := range delays {
			err := s.In(ctx, delay, messaging.Dispatch{RoutingKey: "target", MessageID: fmt.Sprint("in-", delay), ContentType: "text/plain", Payload: []byte(delay.String())})
			if err != nil {
				t.Fatal(err)
			}
		}
		at, got, order := arrivals(broker, "target", start, 75*time.Second)
		if want := []string{"in-1s", "in-3s", "in-11s", "in-1m10s"}; !slices.Equal(order, want) {
			t.Fatalf("arrived in the order %v, want %v", order, want)
		}
		for _, delay := range delays {
			id := fmt.Sprint("in-", delay)
			if at[id] < delay-smallest || at[id] > delay+smallest {
				t.Errorf("%s arrived after %s, want within %s of %s", id, at[id], smallest, delay)
			}
			d := got[id]
			if string(d.Payload) != delay.String() || d.ContentType != "text/plain" || d.MessageType != MessageType {
				t.Errorf("%s arrived as %q, %s, %s", id, d.Payload, d.ContentType, d.MessageType)
			}
			for _, h := range []string{HeaderExchange, HeaderRoutingKey, HeaderDueAt, HeaderContentType} {
				if _, ok := d.Headers[h]; ok {
					t.Errorf("%s arrived with %s", id, h)
				}
			}
		}
		if s.Scheduled() != 4 || s.Delivered() != 4 {
			t.Fatalf("scheduled %d, delivered %d", s.Scheduled(), s.Delivered())
		}
		// 70 s: 1m then 10s; 11 s: 10s then 1s; 3 s: 1s twice or three times; 1 s: 1s.
		if hops := s.Hops(); hops < 7 || hops > 9 {
			t.Fatalf("%d hops, want 7 to 9 (%v)", hops, monitor.hopped())
		}
	})
}

func TestADueMessageWithNothingBoundLoopsOnTheTenSecondRungUntilABindingAppears(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, monitor *fakeMonitor) {
		ctx := context.Background()
		if err := broker.DeclareExchange("billing", "direct", true); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.In(ctx, 2*time.Second, messaging.Dispatch{Topic: "billing", RoutingKey: "invoice.due", MessageID: "inv-1", Payload: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		// arrivals touches the broker every 50 ms, which expires the rungs'
		// messages: a memory stream already waiting is not woken by a
		// message with a TTL published to another queue; the broker expires messages when it is used.
		if _, early, _ := arrivals(broker, "target", start, 45*time.Second); len(early) != 0 {
			t.Fatalf("%d arrived before the binding", len(early))
		}
		if s.Delivered() != 0 || s.Hops() < 5 {
			t.Fatalf("after 45 s: delivered %d, hops %d; want none delivered and the hops climbing", s.Delivered(), s.Hops())
		}
		if broker.MessageCount(wire.DeadLetterQueue(DueQueue)) != 0 {
			t.Fatal("the unbound message was set aside")
		}
		if err := broker.Bind("target", "billing", "invoice.due"); err != nil {
			t.Fatal(err)
		}
		bound := time.Since(start)
		at, got, _ := arrivals(broker, "target", start, 12*time.Second)
		if _, ok := got["inv-1"]; !ok || s.Delivered() != 1 {
			t.Fatalf("not delivered within 12 s of the binding (delivered %d)", s.Delivered())
		}
		if at["inv-1"] < bound || at["inv-1"] > bound+loopRung+smallest {
			t.Fatalf("delivered %s after the start, bound at %s", at["inv-1"], bound)
		}
		if got["inv-1"].ContentType != DefaultContentType {
			t.Fatalf("content type %q, want the default", got["inv-1"].ContentType)
		}
		if monitor.count("undelivered") < 4 {
			t.Fatalf("undelivered %d times", monitor.count("undelivered"))
		}
	})
}

func TestAMomentPastIsDeliveredAndAMessageValueIsEncodedOnce(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, _ *fakeMonitor) {
		err := s.At(context.Background(), time.Now().Add(-time.Hour), messaging.Dispatch{RoutingKey: "target", MessageID: "late", Message: map[string]int{"n": 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, got, _ := arrivals(broker, "target", time.Now(), time.Second)
		d, ok := got["late"]
		if !ok || string(d.Payload) != `{"n":1}` || d.ContentType != "application/json" {
			t.Fatalf("got %v %q %q", ok, d.Payload, d.ContentType)
		}
		if s.Hops() != 0 || s.Delivered() != 1 {
			t.Fatalf("hops %d delivered %d", s.Hops(), s.Delivered())
		}
	})
}

func TestAMissingRungIsSkippedForAShorterOne(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, monitor *fakeMonitor) {
		if err := broker.DeleteQueue(RungName(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.In(context.Background(), 70*time.Second, messaging.Dispatch{RoutingKey: "target", MessageID: "m"}); err != nil {
			t.Fatal(err)
		}
		if got := monitor.hopped(); len(got) != 1 || got[0] != RungName(10*time.Second) {
			t.Fatalf("hopped %v, want the 10 s rung", got)
		}
		if monitor.count("missing:"+RungName(time.Minute)) != 1 {
			t.Fatal("the missing rung was not reported")
		}
		_, got, _ := arrivals(broker, "target", time.Now(), 72*time.Second)
		if _, ok := got["m"]; !ok {
			t.Fatal("not delivered")
		}
	})
}

func TestWhenNoRungTakesItAtReturnsTheErrorAndNothingHopped(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, _ *fakeMonitor) {
		for _, ttl := range []time.Duration{time.Minute, 10 * time.Second, time.Second} {
			if err := broker.DeleteQueue(RungName(ttl)); err != nil {
				t.Fatal(err)
			}
		}
		err := s.In(context.Background(), 70*time.Second, messaging.Dispatch{RoutingKey: "target", MessageID: "m"})
		if !errors.Is(err, messaging.ErrUnroutable) || !strings.Contains(err.Error(), "could be put on no rung") {
			t.Fatalf("error %v", err)
		}
		if s.Hops() != 0 || s.Scheduled() != 0 {
			t.Fatalf("hops %d scheduled %d", s.Hops(), s.Scheduled())
		}
	})
}

func TestADueMessageNoRungTakesIsSetAsideWithTheReason(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, _ *fakeMonitor) {
		for _, ttl := range []time.Duration{10 * time.Second, time.Second} {
			if err := broker.DeleteQueue(RungName(ttl)); err != nil {
				t.Fatal(err)
			}
		}
		// Due now, to a destination nothing is bound to: the 10 s loop is gone.
		if err := s.In(context.Background(), 0, messaging.Dispatch{Topic: "amq.direct", RoutingKey: "nobody", MessageID: "m"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the scheduler has settled what is due: every goroutine of the bubble waits again
		d, ok := broker.Pull(wire.DeadLetterQueue(DueQueue))
		if !ok || d.MessageID != "m" || !strings.Contains(d.Error, "could be put on no rung") {
			t.Fatalf("set aside: %v %q %q", ok, d.MessageID, d.Error)
		}
	})
}

func TestWhatIsNotAScheduledMessageIsSetAsideWithTheSeedsWords(t *testing.T) {
	bubble(t, func(t *testing.T, broker *memory.Broker, s *Scheduler, monitor *fakeMonitor) {
		ctx := context.Background()
		if err := broker.Publish(ctx, messaging.Dispatch{Topic: Exchange, RoutingKey: DueQueue, MessageID: "stray", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := broker.Publish(ctx, messaging.Dispatch{Topic: Exchange, RoutingKey: DueQueue, MessageID: "bad-due",
			Headers: map[string]any{HeaderExchange: "", HeaderRoutingKey: "target", HeaderDueAt: "soon"}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the scheduler has settled what is due: every goroutine of the bubble waits again
		reasons := map[string]string{}
		for {
			d, ok := broker.Pull(wire.DeadLetterQueue(DueQueue))
			if !ok {
				break
			}
			reasons[d.MessageID] = d.Error
		}
		if !strings.Contains(reasons["stray"], missingHeadersText) {
			t.Errorf("stray: %q", reasons["stray"])
		}
		if !strings.Contains(reasons["bad-due"], "acemq: x-schedule-due-at on a message in acemq.schedule.due is soon, which is not a moment") {
			t.Errorf("bad-due: %q", reasons["bad-due"])
		}
		if broker.MessageCount("target") != 0 || monitor.count("set aside") != 2 {
			t.Fatalf("target %d, set aside %d", broker.MessageCount("target"), monitor.count("set aside"))
		}
	})
}

func TestAnEmptyRoutingKeyIsRefused(t *testing.T) {
	bubble(t, func(t *testing.T, _ *memory.Broker, s *Scheduler, _ *fakeMonitor) {
		err := s.In(context.Background(), time.Minute, messaging.Dispatch{Topic: "billing"})
		if !errors.Is(err, ErrNoRoutingKey) || err.Error() != "acemq: a scheduled message needs a routing key" {
			t.Fatalf("error %v", err)
		}
	})
}

func TestTheRungsOneMessageTakes(t *testing.T) {
	for remaining, want := range map[time.Duration]string{
		500 * time.Millisecond: "",
		time.Second:            "acemq.schedule.1s",
		9 * time.Second:        "acemq.schedule.1s",
		70 * time.Second:       "acemq.schedule.1m",
		24 * time.Hour:         "acemq.schedule.1h",
		59 * time.Minute:       "acemq.schedule.10m",
	} {
		rungs := rungsFor(remaining)
		got := ""
		if len(rungs) > 0 {
			got = rungs[0].Name
		}
		if got != want {
			t.Errorf("%s left: %q, want %q", remaining, got, want)
		}
	}
}

type fakeMonitor struct {
	mu     sync.Mutex
	events []string
}

func (m *fakeMonitor) add(event string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, event)
}

func (m *fakeMonitor) count(event string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if e == event {
			n++
		}
	}
	return n
}

func (m *fakeMonitor) hopped() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rungs []string
	for _, e := range m.events {
		if rung, ok := strings.CutPrefix(e, "hop:"); ok {
			rungs = append(rungs, rung)
		}
	}
	return rungs
}

func (m *fakeMonitor) Scheduled()                 { m.add("scheduled") }
func (m *fakeMonitor) Hopped(rung string)         { m.add("hop:" + rung) }
func (m *fakeMonitor) Delivered()                 { m.add("delivered") }
func (m *fakeMonitor) Undelivered(string, string) { m.add("undelivered") }
func (m *fakeMonitor) RungMissing(rung string)    { m.add("missing:" + rung) }
func (m *fakeMonitor) SetAside(error)             { m.add("set aside") }
