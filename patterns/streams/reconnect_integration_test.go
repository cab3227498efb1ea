package streams

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// TestAFirstReaderResumesAfterEachDroppedConnection reads 10,000 messages
// from the first offset while every connection to the broker is closed three
// times (rabbitmqctl close_all_connections), each time while the handler holds
// a message whose acknowledgement will fail. Every message is handled at
// least once; what is handled twice is at most the prefetch per drop; the
// reader is never handed offset 0 again (it resumes, it does not restart).
func TestAFirstReaderResumesAfterEachDroppedConnection(t *testing.T) {
	entered := time.Now()
	url := testenv.Disrupt(t)
	t.Logf("broker lock after %v", time.Since(entered))
	t.Cleanup(func() { t.Logf("test ends %v after the lock", time.Since(entered)) })
	transport, stream := brokerStream(t, url, "resume", Retention{MaxAge: time.Hour})
	const total, prefetch = 10_000, 100
	sent := ids("r", 0, total)
	began := time.Now()
	publish(t, transport, stream, sent...)
	t.Logf("published in %v", time.Since(began))

	drops := map[int]bool{2000: true, 5000: true, 8000: true}
	held := make(chan struct{}, len(drops))    // buffered: the handler never waits to say it holds
	release := make(chan struct{}, len(drops)) // buffered: the test never waits on a handler that gave up
	var (
		mu      sync.Mutex
		handled = map[string]int{}
		calls   int
	)
	s := newSeen()
	h := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			mu.Lock()
			handled[d.MessageID]++
			calls++
			drop := drops[calls]
			mu.Unlock()
			s.add(d)
			if drop {
				held <- struct{}{}
				select { // bounded: the test releases it once the connections are closed
				case <-release:
				case <-time.After(30 * time.Second):
				}
			}
		}
	})
	monitor := &countingMonitor{}
	read(t, transport, stream, h, Options.From(FromFirst()), Options.Prefetch(prefetch),
		Options.ReconnectDelay(50*time.Millisecond), Options.Monitor(monitor))
	for range drops {
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatal("the handler did not reach the next drop")
		}
		t.Logf("held at %v", time.Since(began))
		testenv.Rabbitmqctl(t, "close_all_connections", "streams resume test")
		t.Logf("closed at %v", time.Since(began))
		release <- struct{}{}
	}
	s.waitFor(t, "every message", func(s *seen) bool { return len(s.count) == total })
	t.Logf("read at %v", time.Since(began))

	mu.Lock()
	defer mu.Unlock()
	duplicates := 0
	for _, id := range sent {
		if handled[id] == 0 {
			t.Fatalf("%s was never handled", id)
		}
		duplicates += handled[id] - 1
	}
	t.Logf("%d messages, %d handled, %d handled twice over 3 drops (prefetch %d), %d resumptions", total, calls, duplicates, prefetch, monitor.resumed.Load())
	if duplicates < len(drops) || duplicates > len(drops)*prefetch {
		t.Fatalf("%d duplicates over %d drops: want at least one (the held message) and at most the prefetch each", duplicates, len(drops))
	}
	if handled[sent[0]] != 1 {
		t.Fatalf("offset 0 was handled %d times: the reader restarted from first", handled[sent[0]])
	}
	if monitor.resumed.Load() < int64(len(drops)) {
		t.Fatalf("%d resumptions for %d drops", monitor.resumed.Load(), len(drops))
	}
}
