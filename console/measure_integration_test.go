package console

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// measure runs the console's measurements: a 1,000,000-message dead-letter
// queue opened, and 10,000 messages replayed from the page. They take a
// minute or two and a few hundred MB of the broker's memory, so make test
// leaves them out.
var measure = flag.Bool("console.measure", false, "measure opening a 1,000,000-message dead-letter queue and replaying 10,000 messages")

// TestOpeningAMillionMessageDeadLetterQueue fills a dead-letter queue with
// 1,000,000 small messages and opens its page: it answers within a second
// with the count and the first page, and says what its groups cover.
func TestOpeningAMillionMessageDeadLetterQueue(t *testing.T) {
	if !*measure {
		t.Skip("a measurement: run it with -console.measure")
	}
	address := testenv.Broker(t)
	queue, ch := rawQueue(t, address)
	const total = 1_000_000
	started := time.Now()
	fill(t, ch, queue, total, func(i int) string {
		return fmt.Sprintf("exhausted 5 attempts: payment service 50%d for order %d", i%4, i)
	})
	t.Logf("filled %s with %d messages in %s", queue, total, time.Since(started).Round(time.Millisecond))
	transport := rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.Logger(quiet()), rabbitmq.Options.BrokerTimeout(5*time.Second))
	defer transport.Close()
	c := New(Options.Connector(transport), Options.Logger(quiet()))
	defer c.Close()
	b := newBrowser(t, c)
	for round := range 3 {
		started = time.Now()
		w := b.get("/queues/" + queue)
		took := time.Since(started)
		page := w.Body.String()
		coverage := between(page, `id="coverage">`, "</p>")
		t.Logf("round %d: the page answered %d in %s: %s", round, w.Code, took.Round(time.Millisecond), strip(coverage))
		if !strings.Contains(page, `<strong id="depth">1,000,000</strong>`) || !strings.Contains(coverage, "of 1,000,000 messages") || !strings.Contains(page, ">m49<") {
			t.Fatalf("the page lacks the count, the coverage or the first page:\n%s", page)
		}
		if took > time.Second {
			t.Errorf("round %d: the page took %s, more than a second", round, took)
		}
	}
}

// TestReplayingTenThousandMessagesFromThePage counts and replays 10,000
// messages of one group (of 12,000) through the console's actions and says
// how long each step took.
func TestReplayingTenThousandMessagesFromThePage(t *testing.T) {
	if !*measure {
		t.Skip("a measurement: run it with -console.measure")
	}
	address := testenv.Broker(t)
	queue, ch := rawQueue(t, address)
	source := strings.TrimSuffix(queue, ".dlq")
	if _, err := ch.QueueDeclare(source, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(source, false, false, false) })
	fill(t, ch, queue, 12_000, func(i int) string {
		if i%6 == 5 {
			return "card declined"
		}
		return fmt.Sprintf("timeout calling payments after %d ms", i)
	})
	transport := rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.Logger(quiet()))
	defer transport.Close()
	c := New(Options.Connector(transport), Options.Logger(quiet()), Options.Actions(true))
	defer c.Close()
	b := newBrowser(t, c)
	b.get("/queues/" + queue)
	group := groupKey(fold("timeout calling payments after 1 ms"))
	started := time.Now()
	count := waitFor(t, c, b.post("/queues/"+queue+"/count", url.Values{"scope": {"group"}, "group": {group}}))
	counted := time.Since(started)
	started = time.Now()
	moved := waitFor(t, c, b.post("/jobs/"+count.ID+"/confirm", url.Values{"confirm": {"10000"}}))
	replayed := time.Since(started)
	t.Logf("counted %d in %s; replayed: %s in %s", count.Counted, counted.Round(time.Millisecond), moved.Result, replayed.Round(time.Millisecond))
	if count.Counted != 10_000 || moved.Result.Moved != 10_000 {
		t.Fatalf("counted %d, moved %d; want 10,000 each", count.Counted, moved.Result.Moved)
	}
	state, err := ch.QueueDeclarePassive(source, true, false, false, false, nil)
	if err != nil || state.Messages != 10_000 {
		t.Fatalf("%s holds %d (%v), want 10,000", source, state.Messages, err)
	}
}

// between is the text of s after start up to end.
func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	before, _, _ := strings.Cut(after, end)
	return before
}

// strip removes the markup of a page's fragment.
func strip(s string) string {
	var b strings.Builder
	inTag := false
	for _, r := range s {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
		case !inTag:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
