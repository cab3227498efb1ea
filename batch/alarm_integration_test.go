package batch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// alarmFor is how long the memory alarm holds.
const alarmFor = 10 * time.Second

// Through a memory alarm of 10 s the writer keeps its one connection: every
// call while blocked fails fast with ErrPublishingPaused instead of dialling a
// new connection (which the broker would block again after its first publish),
// and publishing resumes on the same connection when the alarm clears.
func TestWriterKeepsItsBlockedConnectionThroughAMemoryAlarm(t *testing.T) {
	url := testenv.Disrupt(t)
	queue := declareQueue(t, url)
	t.Cleanup(func() { clearMemoryAlarm(t) }) // whatever happens below
	clearMemoryAlarm(t)                       // a previous test's alarm may not have cleared yet
	name := testenv.Name(t, "batch-alarm")
	dials := &dialCounter{unblocked: make(chan struct{}, 1)}
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.ConnectionName(name),
		rabbitmq.Options.Monitor(dials), rabbitmq.Options.BrokerTimeout(5*time.Second))
	defer transport.Close()
	writer := New(transport)
	defer writer.Close()

	write := func(payload string) (int, error, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		began := time.Now()
		n, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte(payload)})
		return n, err, time.Since(began)
	}
	if _, err, _ := write("before"); err != nil {
		t.Fatalf("write before the alarm: %v", err)
	}

	raiseMemoryAlarm(t)
	raised := time.Now()
	calls, paused, landed, most := 0, 0, 0, 0
	var slowest time.Duration
	var other error
	for time.Since(raised) < alarmFor {
		for range 10 {
			n, err, took := write("during")
			calls++
			landed += n
			slowest = max(slowest, took)
			switch {
			case errors.Is(err, messaging.ErrPublishingPaused):
				paused++
			case err != nil && other == nil:
				other = err
			}
			time.Sleep(50 * time.Millisecond) // real time: the alarm lasts alarmFor on the broker's clock; the calls are paced through it
		}
		most = max(most, brokerConnections(t, name))
	}
	clearMemoryAlarm(t)

	// The broker tells the connection it is unblocked; the next write lands
	// on the same connection.
	select {
	case <-dials.unblocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not unblock the writer's connection within 30 s of the alarm clearing")
	}
	if _, err, _ := write("after"); err != nil {
		t.Fatalf("the first write after the connection was unblocked failed: %v", err)
	}
	resumed := time.Since(raised) - alarmFor
	most = max(most, brokerConnections(t, name))

	t.Logf("during a %s memory alarm: %d calls, %d failed with ErrPublishingPaused, %d landed, slowest %s, other error %v; %d dial(s), at most %d connection(s) listed by the broker; resumed %s after the alarm",
		alarmFor, calls, paused, landed, slowest.Round(time.Millisecond), other, dials.count.Load(), most, resumed.Round(time.Millisecond))
	if paused == 0 {
		t.Errorf("no call failed with ErrPublishingPaused during the alarm (other error: %v); the scenario proved nothing", other)
	}
	if other != nil {
		t.Errorf("a call during the alarm failed with something other than ErrPublishingPaused: %v", other)
	}
	if slowest >= time.Second {
		t.Errorf("the slowest call during the alarm took %s; a blocked writer must fail fast", slowest)
	}
	if got := dials.count.Load(); got != 1 {
		t.Errorf("the writer dialled %d connections through the alarm; want the one it had", got)
	}
	if most > 1 {
		t.Errorf("the broker listed %d connections named %s; want at most one", most, name)
	}
}

// dialCounter counts the transport's dials and hears the end of the block.
type dialCounter struct {
	rabbitmq.NopMonitor
	count     atomic.Int32
	unblocked chan struct{}
}

func (d *dialCounter) ConnectionOpened(error) { d.count.Add(1) }
func (d *dialCounter) ConnectionUnblocked() {
	select {
	case d.unblocked <- struct{}{}:
	default:
	}
}

func brokerConnections(t *testing.T, name string) int {
	t.Helper()
	out := testenv.Rabbitmqctl(t, "-q", "list_connections", "--no-table-headers", "client_properties")
	return strings.Count(out, name)
}

// raiseMemoryAlarm lowers the watermark so that the broker raises its memory
// alarm, and waits (bounded) until it has.
func raiseMemoryAlarm(t *testing.T) {
	t.Helper()
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.000001")
	awaitAlarm(t, true)
}

// clearMemoryAlarm restores the watermark and waits (bounded) for the alarm to
// clear.
func clearMemoryAlarm(t *testing.T) {
	t.Helper()
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
	awaitAlarm(t, false)
}

func awaitAlarm(t *testing.T, raised bool) {
	t.Helper()
	// The broker's own alarm state sends no notification before a connection
	// publishes: it is looked at.
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the memory alarm's state to become raised=%t", raised), func() bool {
		return strings.Contains(testenv.Rabbitmqctl(t, "-q", "eval", "rabbit_alarm:get_alarms()."), "memory") == raised
	})
}
