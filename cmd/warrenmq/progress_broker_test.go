package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
)

// manyMessages is how many messages the progress test replays: enough to
// take seconds, few enough to keep the test near 10 s.
// WARRENMQ_REPLAY_MESSAGES=20000 runs it at the size doc/operations.md shows.
func manyMessages(t *testing.T) int {
	if text := os.Getenv("WARRENMQ_REPLAY_MESSAGES"); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil || n <= 0 {
			t.Fatalf("WARRENMQ_REPLAY_MESSAGES=%q is not a positive count", text)
		}
		return n
	}
	return 6000
}

// bulkFixture declares a subscription queue and its dead-letter queue with
// n dead-lettered OrderPlaced messages (one of three reasons each) and six
// OrderCancelled ones.
func bulkFixture(t *testing.T, address string, n int) (string, messaging.Declarer) {
	reasons := []string{"exhausted 5 attempts: timeout calling payments", "exhausted 5 attempts: card declined", "rejected: unknown customer"}
	return fixtureWith(t, address, n+6, func(queue string, i int) messaging.Dispatch {
		kind := "OrderPlaced"
		if i >= n {
			kind = "OrderCancelled"
		}
		return messaging.Dispatch{RoutingKey: wire.DeadLetterQueue(queue), MessageID: fmt.Sprint("m", i), MessageType: kind,
			Attempt: 5, Error: reasons[i%len(reasons)], Payload: []byte(`{"order":1}`), Mandatory: true}
	})
}

// progressLine is a line of the lines mode.
var progressLine = regexp.MustCompile(`^replay \S+: (\d+) of (\d+) \(\d+%\) messages, (\d+) (?:would move|moved), (\d+) skipped, \d+/s, [\d.]+m?s$`)

// A long replay shows its progress on stderr (lines off a terminal, a bar on
// one) and ends with its totals on stdout; its dry run is a summary of a
// few lines, not a line per message.
func TestReplayOfManyMessagesShowsProgress(t *testing.T) {
	defer func(every time.Duration) { progressEvery = every }(progressEvery)
	progressEvery = 250 * time.Millisecond // the broker's real time: lines while it works
	address := testenv.Broker(t)
	n := manyMessages(t)
	queue, declarer := bulkFixture(t, address, n)
	dlq := wire.DeadLetterQueue(queue)
	ctx := context.Background()

	// Interrupted (Ctrl-C ends the context), a pass says so, with its totals.
	stdout := &bytes.Buffer{}
	interrupted, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := run(interrupted, []string{"replay", "-amqp", address, "-dry-run", dlq}, stdout, &bytes.Buffer{})
	cancel()
	if exitCode(err) != exitFailed || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run it again to continue") ||
		!strings.Contains(stdout.String(), fmt.Sprintf("(cancelled) to queue %s; 0 failed, %d left in %s", queue, n+6, dlq)) {
		t.Fatalf("an interrupted pass: exit %d, %v\n%s", exitCode(err), err, stdout)
	}

	stdout.Reset()
	stderr := &testenv.LogBuffer{}
	if err := run(ctx, []string{"replay", "-amqp", address, "-dry-run", "-type", "OrderPlaced", "-progress", "lines", dlq}, stdout, stderr); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	t.Logf("warrenmq replay -dry-run -type OrderPlaced %s\nstderr:\n%sstdout:\n%s", dlq, stderr, stdout)
	if lines := strings.Count(stdout.String(), "\n"); lines > 10 {
		t.Fatalf("a dry run of %d messages printed %d lines:\n%s", n+6, lines, stdout)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("would move %d, skipped 6 (drained)", n)) || !hasRow(stdout.String(), "skip", "2") ||
		!hasRow(stdout.String(), "move", strconv.Itoa((n+2)/3), "exhausted", "5", "attempts:", "timeout") || !strings.Contains(stdout.String(), "(-each lists every message)") {
		t.Fatalf("the dry run's summary:\n%s", stdout)
	}
	checkProgressLines(t, stderr.String(), n+6)

	stdout.Reset()
	terminal := &fakeTerminal{}
	started := time.Now()
	if err := run(ctx, []string{"replay", "-amqp", address, "-type", "OrderPlaced", dlq}, stdout, terminal); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	took := time.Since(started)
	bars := strings.Split(terminal.String(), "\r")
	t.Logf("warrenmq replay -type OrderPlaced %s (%s, %.0f/s), the last bars on the terminal:\n%q\nstdout:\n%s",
		dlq, took.Round(time.Millisecond), float64(n)/took.Seconds(), bars[max(len(bars)-3, 0):], stdout)
	if len(bars) < 3 || !strings.HasPrefix(bars[len(bars)-1], fmt.Sprintf("replay %s [==============================] %d of %d (100%%)", dlq, n+6, n+6)) ||
		!strings.HasSuffix(terminal.String(), "\x1b[K\n") || strings.Count(terminal.String(), "\n") != 1 {
		t.Fatalf("on a terminal, one bar redrawn in place, ended once:\n%q", terminal.String())
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("%s: moved %d, skipped 6 (drained) to queue %s; 0 failed, 6 left in %s", dlq, n, queue, dlq)) {
		t.Fatalf("the totals:\n%s", stdout)
	}
	if depth(t, declarer, queue) != n || depth(t, declarer, dlq) != 6 {
		t.Fatalf("after the replay: %d in %s, %d in %s", depth(t, declarer, queue), queue, depth(t, declarer, dlq), dlq)
	}
}

// checkProgressLines checks that the lines mode wrote lines whose counts
// never go down and stay within total.
func checkProgressLines(t *testing.T, text string, total int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		t.Fatalf("want progress lines every %s; got:\n%s", progressEvery, text)
	}
	last := -1
	for _, line := range lines {
		m := progressLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a progress line: %q", line)
		}
		handled, _ := strconv.Atoi(m[1])
		if of, _ := strconv.Atoi(m[2]); of != total || handled < last || handled > total {
			t.Fatalf("progress went %d then %q (of %d)", last, line, total)
		}
		last = handled
	}
}
