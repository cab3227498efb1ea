package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq"
)

// rawQueue declares a classic durable queue named {unique}.dlq, as the
// settlement topology declares one, deletes it when the test ends, and
// returns its name and a channel in confirm mode.
func rawQueue(t *testing.T, url string) (string, *amqp.Channel) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	queue := wire.DeadLetterQueue(testenv.Name(t, "console"))
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(queue, false, false, false)
		}
	})
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	return queue, ch
}

// fill publishes n set-aside copies m0..m{n-1} to queue, confirmed, with
// reason(i); at most window are unconfirmed at once.
func fill(t testing.TB, ch *amqp.Channel, queue string, n int, reason func(i int) string) {
	t.Helper()
	const window = 2000
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window))
	ctx := context.Background()
	waitOne := func() {
		select {
		case c := <-confirms:
			if !c.Ack {
				t.Fatalf("the broker refused message %d", c.DeliveryTag)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no confirm within 30s")
		}
	}
	for i := range n {
		if i >= window {
			waitOne()
		}
		err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
			MessageId: fmt.Sprint("m", i), Type: "order-placed", DeliveryMode: amqp.Persistent,
			Headers: amqp.Table{wire.HeaderError: reason(i), wire.HeaderAttempt: int32(5)},
			Body:    []byte(fmt.Sprintf(`{"n":%d}`, i)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for range min(n, window) {
		waitOne()
	}
}

// consumeAll consumes queue with a consumer (basic.consume, acknowledging)
// until it has n messages, and returns their ids in the order delivered.
func consumeAll(t *testing.T, url, queue string, n int) []string {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < n {
		select {
		case d := <-deliveries:
			got = append(got, d.MessageId)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d messages were consumed from %s", len(got), n, queue)
		}
	}
	return got
}

// TestBrowsingASetAsideQueueTakesNothingAndKeepsItsOrder opens a 300-message
// dead-letter queue's page (which reads the first 120), the second page of
// one group, a message deep in the queue, and counts a replay (a dry run that
// reads the whole queue), then consumes the queue: the 300 messages are all
// there, once each, in the order they were published.
func TestBrowsingASetAsideQueueTakesNothingAndKeepsItsOrder(t *testing.T) {
	url := testenv.Broker(t)
	queue, ch := rawQueue(t, url)
	const total = 300
	fill(t, ch, queue, total, func(i int) string { return fmt.Sprintf("exhausted 5 attempts: reason %c for %d", 'a'+i%3, i) })
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet()), rabbitmq.Options.BrokerTimeout(5*time.Second))
	defer transport.Close()
	c := New(Options.Connector(transport), Options.Logger(quiet()), Options.ScanLimit(120), Options.PageSize(20), Options.ScanBudget(10*time.Second), Options.Actions(true))
	defer c.Close()
	b := newBrowser(t, c)

	page := b.get("/queues/" + queue).Body.String()
	for _, want := range []string{"The counts below cover the first <strong>120</strong> of 300", `<td class="n count">40</td>`, ">m0<", ">m19<"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the queue's page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, ">m20<") {
		t.Fatal("the first page lists more than its 20 messages")
	}
	group := b.get("/queues/" + queue + "/groups/" + groupKey(fold("exhausted 5 attempts: reason b for 1")) + "?page=2").Body.String()
	for i := 61; i < 120; i += 3 { // the second 20 of reason b: m61, m64, ... m118
		if !strings.Contains(group, fmt.Sprintf(">m%d<", i)) {
			t.Fatalf("the group's second page lacks m%d:\n%s", i, group)
		}
	}
	if strings.Contains(group, ">m58<") {
		t.Fatal("the group's second page lists a message of its first")
	}
	if message := b.get("/queues/" + queue + "/messages/m111").Body.String(); !strings.Contains(message, "112 from the head of the queue") {
		t.Fatalf("the message's page:\n%s", message)
	}
	counted := waitFor(t, c, b.post("/queues/"+queue+"/count", urlValues("scope", "filter", "error", "reason c")))
	if counted.Counted != total/3 {
		t.Fatalf("the count found %d of reason c, want %d", counted.Counted, total/3)
	}

	got := consumeAll(t, url, queue, total)
	for i, id := range got {
		if id != fmt.Sprint("m", i) {
			t.Fatalf("message %d consumed is %s: browsing reordered the queue (%v...)", i, id, got[:min(len(got), i+3)])
		}
	}
	if state, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil || state.Messages != 0 {
		t.Fatalf("after consuming the %d: %d left (%v)", total, state.Messages, err)
	}
}

// waitFor waits for the job an action redirected to.
func waitFor(t *testing.T, c *Console, w interface{ Result() *http.Response }) *job {
	t.Helper()
	location := w.Result().Header.Get("Location")
	j, ok := c.jobs.get(strings.TrimPrefix(location, "/jobs/"))
	if !ok {
		t.Fatalf("no job started (%s)", location)
	}
	select {
	case <-j.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("job %s did not finish within 60s", j.ID)
	}
	if j.Err != "" {
		t.Fatalf("job %s: %s", j.ID, j.Err)
	}
	return j
}

func urlValues(pairs ...string) map[string][]string {
	values := map[string][]string{}
	for i := 0; i < len(pairs); i += 2 {
		values[pairs[i]] = append(values[pairs[i]], pairs[i+1])
	}
	return values
}
