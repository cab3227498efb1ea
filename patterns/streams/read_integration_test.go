package streams

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

func TestTwoReadersOfOneStreamEachSeeEveryMessageInOrder(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "two", Retention{MaxAge: time.Hour})
	sent := ids("two", 0, 200)
	publish(t, transport, stream, sent...)
	a, b := newSeen(), newSeen()
	read(t, transport, stream, a.handler(), Options.From(FromFirst()), Options.Prefetch(50))
	read(t, transport, stream, b.handler(), Options.From(FromFirst()), Options.Name(stream+"-b"))
	for _, s := range []*seen{a, b} {
		s.waitFor(t, "every message", func(s *seen) bool { return len(s.ids) >= len(sent) })
		s.mu.Lock()
		if !slices.Equal(s.ids, sent) {
			t.Fatalf("a reader saw %d messages, not the %d sent in order", len(s.ids), len(sent))
		}
		if len(s.offsets) != len(sent) || !slices.IsSorted(s.offsets) || s.offsets[0] != 0 || s.offsets[len(sent)-1] != uint64(len(sent)-1) {
			t.Fatalf("offsets not 0..%d in order: first %v", len(sent)-1, s.offsets[:min(5, len(s.offsets))])
		}
		s.mu.Unlock()
	}
}

func TestAReaderFromAnExactOffsetStartsExactlyThere(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "exact", Retention{MaxAge: time.Hour})
	sent := ids("exact", 0, 100)
	publish(t, transport, stream, sent...)
	s := newSeen()
	read(t, transport, stream, s.handler(), Options.From(FromOffset(37)))
	s.waitFor(t, "offsets 37..99", func(s *seen) bool { return len(s.ids) >= 63 })
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.ids, sent[37:]) || s.offsets[0] != 37 {
		t.Fatalf("from offset 37: first %s at %d, %d messages", s.ids[0], s.offsets[0], len(s.ids))
	}
}

func TestAReaderFromATimestampStartsAtOrBeforeTheFirstMessageAfterIt(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "time", Retention{MaxAge: time.Hour})
	before := ids("before", 0, 50)
	publish(t, transport, stream, before...)
	time.Sleep(1200 * time.Millisecond)                 // the broker stamps chunks in wall-clock time: the gap must be real
	since := time.Now().Add(-testenv.BrokerClockLag(t)) // on the broker's clock, which stamps the chunks
	after := ids("after", 0, 50)
	publish(t, transport, stream, after...)
	s := newSeen()
	read(t, transport, stream, s.handler(), Options.From(FromTimestamp(since)))
	s.waitFor(t, "every message after the timestamp", func(s *seen) bool { return s.count[after[len(after)-1]] > 0 })
	s.mu.Lock()
	defer s.mu.Unlock()
	early := 0
	for _, id := range s.ids {
		if strings.HasPrefix(id, "before") {
			early++
		}
	}
	if early == len(before) {
		t.Fatalf("the reader started at the beginning, not at the timestamp")
	}
	if !slices.Equal(s.ids[early:], after) {
		t.Fatalf("after %d earlier messages, the reader did not see every later one in order: %v", early, s.ids[:min(5, len(s.ids))])
	}
}

func TestANextReaderSeesOnlyNewMessages(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "next", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("old", 0, 30)...)
	s := newSeen()
	read(t, transport, stream, s.handler()) // no offset stated: next
	fresh := ids("new", 0, 30)
	publish(t, transport, stream, fresh...)
	s.waitFor(t, "the new messages", func(s *seen) bool { return len(s.ids) >= len(fresh) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.ids, fresh) {
		t.Fatalf("a next reader saw %v..., not only the %d new messages", s.ids[:min(5, len(s.ids))], len(fresh))
	}
}

// TestARetryOnAStreamParksOneCopyAndAppendsNothing: the handler asks for
// Retry on one of 100 messages; the stream still holds exactly 100, the
// parked queue one copy with the refusal, and the other 99 were handled.
func TestARetryOnAStreamParksOneCopyAndAppendsNothing(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "retry", Retention{MaxAge: time.Hour})
	sent := ids("retry", 0, 100)
	publish(t, transport, stream, sent...)
	handled := newSeen()
	cause := errors.New("the projection store is down")
	refusals := &countingMonitor{}
	h := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			if d.MessageID == "retry-00042" {
				if err := messaging.Retry(ctx, d, cause); err != nil {
					panic(err)
				}
				if decision, _ := messaging.DecisionOf(ctx, d); decision.Verdict != messaging.Parked || !errors.Is(decision.Reason, cause) {
					panic("the refused retry does not read Parked with the handler's reason")
				}
				continue
			}
			handled.add(d)
		}
	})
	r := read(t, transport, stream, h, Options.From(FromFirst()), Options.Monitor(refusals))
	handled.waitFor(t, "99 handled", func(s *seen) bool { return len(s.ids) >= 99 })
	_ = r.Close()
	if handled.distinct() != 99 || handled.count["retry-00042"] != 0 || refusals.refused.Load() != 1 {
		t.Fatalf("handled %d distinct (want 99 without retry-00042), %d refusals", handled.distinct(), refusals.refused.Load())
	}

	copies := parkedCopies(t, url, stream)
	if len(copies) != 1 {
		t.Fatalf("%d copies parked on %s.parked, want 1", len(copies), stream)
	}
	parked := copies[0]
	reason, _ := parked.Headers["x-acemq-error"].(string)
	want := `acemq: a handler on stream "` + stream + `" returned messaging.Retry for message retry-00042 at offset 42, which this library refuses:`
	if parked.MessageId != "retry-00042" || !strings.Contains(reason, want) || !strings.HasSuffix(reason, "The handler's reason was: the projection store is down") {
		t.Fatalf("parked %s with reason %q", parked.MessageId, reason)
	}

	// The stream holds exactly the 100: a marker appended now is the 101st.
	publish(t, transport, stream, "marker")
	all := newSeen()
	read(t, transport, stream, all.handler(), Options.From(FromFirst()), Options.Prefetch(200))
	all.waitFor(t, "the marker", func(s *seen) bool { return s.count["marker"] > 0 })
	if len(all.ids) != 101 || !slices.Equal(all.ids[:100], sent) {
		t.Fatalf("the stream holds %d messages before the marker, not the 100 published", len(all.ids)-1)
	}
}

func TestDeclaringSevenDaysShowsSevenDAndADifferentAgeIsAPreconditionFailure(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "declare", Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 20})
	out := testenv.Rabbitmqctl(t, "list_queues", "name", "arguments")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, stream+"\t") {
			line = l
		}
	}
	if !strings.Contains(line, `{"x-max-age","7D"}`) || !strings.Contains(line, `{"x-queue-type","stream"}`) || strings.Contains(line, SegmentBytesArgument) {
		t.Fatalf("the stream's arguments: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := Declare(ctx, conn, stream, Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 20}); err != nil {
		t.Fatalf("declaring alike again: %v", err)
	}
	err = Declare(ctx, conn, stream, Retention{MaxAge: 24 * time.Hour, MaxBytes: 10 << 20})
	if !errors.Is(err, messaging.ErrPreconditionFailed) {
		t.Fatalf("redeclaring with another age: %v", err)
	}
	declarer, _ := messaging.As[messaging.Declarer](conn)
	if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: stream, Durable: true}); !errors.Is(err, messaging.ErrPreconditionFailed) {
		t.Fatalf("redeclaring the stream as a classic queue: %v", err)
	}
}

func TestReadingAStreamThatDoesNotExistFailsWithNotFound(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "missing", Retention{MaxAge: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := Read(ctx, transport, stream+"-absent", newSeen().handler(), Options.Logger(quiet))
	testenv.DeleteTopology(url, nil, stream+"-absent.dlq", stream+"-absent.parked")
	if !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("reading a missing stream: %v", err)
	}
}

// TestAnInProgressOnAStreamIsParkedToo: InProgress is refused as Retry
// is, end to end through the runtime's settlement.
func TestAnInProgressOnAStreamIsParkedToo(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "inprogress", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("hold", 0, 10)...)
	handled := newSeen()
	h := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			if d.MessageID == "hold-00003" {
				if err := messaging.InProgress(ctx, d, time.Minute); err != nil {
					panic(err)
				}
				continue
			}
			handled.add(d)
		}
	})
	r := read(t, transport, stream, h, Options.From(FromFirst()))
	handled.waitFor(t, "9 handled", func(s *seen) bool { return len(s.ids) >= 9 })
	_ = r.Close()
	copies := parkedCopies(t, url, stream)
	if len(copies) != 1 {
		t.Fatalf("%d copies parked on %s.parked, want 1", len(copies), stream)
	}
	parked := copies[0]
	reason, _ := parked.Headers["x-acemq-error"].(string)
	if parked.MessageId != "hold-00003" || !strings.Contains(reason, "returned messaging.InProgress for message hold-00003 at offset 3, which this library refuses") {
		t.Fatalf("parked %s with reason %q", parked.MessageId, reason)
	}
	if handled.distinct() != 9 {
		t.Fatalf("%d handled, want 9", handled.distinct())
	}
}

// TestTailPrintsFromAnOffsetAndSetsNothingAside: Tail reads from an exact
// offset, stops when told, and copies nothing anywhere.
func TestTailPrintsFromAnOffsetAndSetsNothingAside(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "tail", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("tail", 0, 20)...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var lines []string
	err := Tail(ctx, transport, stream, FromOffset(15), func(d messaging.Delivery) bool {
		lines = append(lines, TailLine(d, 40))
		return len(lines) < 5
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "15\tid=tail-00015\t") || !strings.HasPrefix(lines[4], "19\tid=tail-00019\t") {
		t.Fatalf("tailed %q", lines)
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	if _, err := declarer.InspectQueue(ctx, stream+".dlq"); !errors.Is(err, messaging.ErrNotFound) {
		t.Fatalf("tail declared %s.dlq: %v", stream, err)
	}
}

// recordingConnector records the StreamConfig of every stream opened through
// it, beneath Read.
type recordingConnector struct {
	messaging.Connector
	mu      sync.Mutex
	configs []messaging.StreamConfig
}

func (c *recordingConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConnection{Connection: conn, c: c}, nil
}

type recordingConnection struct {
	messaging.Connection
	c *recordingConnector
}

func (r recordingConnection) Unwrap() messaging.Connection { return r.Connection }

func (r recordingConnection) Reader(ctx context.Context) (messaging.Reader, error) {
	reader, err := r.Connection.Reader(ctx)
	if err != nil {
		return nil, err
	}
	return recordingReader{Reader: reader, c: r.c}, nil
}

type recordingReader struct {
	messaging.Reader
	c *recordingConnector
}

func (r recordingReader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	r.c.mu.Lock()
	r.c.configs = append(r.c.configs, config)
	r.c.mu.Unlock()
	return r.Reader.Stream(ctx, config)
}

// TestReadDeclaresOnlyTheSetAsideQueuesAndStatesEverythingItSends: the
// stream is consumed without being declared (the set-aside queues are), with
// x-stream-offset next when nothing is stated, prefetch 10 and the exact tag.
func TestReadDeclaresOnlyTheSetAsideQueuesAndStatesEverythingItSends(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "config", Retention{MaxAge: time.Hour})
	recorder := &recordingConnector{Connector: transport}
	read(t, recorder, stream, newSeen().handler(), Options.Name(stream+"-a"))
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	if len(recorder.configs) != 1 {
		t.Fatalf("%d streams opened", len(recorder.configs))
	}
	got := recorder.configs[0]
	if got.EstablishTopology || !got.DeadLetters || got.BufferCapacity != DefaultPrefetch ||
		got.ConsumerName != stream+"-a" || !got.ExactConsumerTag ||
		len(got.ConsumerArguments) != 1 || got.ConsumerArguments[OffsetArgument] != "next" {
		t.Fatalf("the stream was opened with %+v", got)
	}
	conn, err := transport.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	for _, q := range []string{stream + ".dlq", stream + ".parked"} {
		if _, err := declarer.InspectQueue(context.Background(), q); err != nil {
			t.Fatalf("%s was not declared: %v", q, err)
		}
	}
}

// A reader without a Name is tagged acemq-{stream} exactly, the tag every
// AceMQ library gives its consumers (before: the stream's name and random
// hex); two such readers of one stream both start, each on its own channel.
func TestAReaderWithoutANameCarriesTheFamilysTag(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "tag", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, "m")
	recorder := &recordingConnector{Connector: transport}
	a, b := newSeen(), newSeen()
	read(t, recorder, stream, a.handler(), Options.From(FromFirst()))
	read(t, recorder, stream, b.handler(), Options.From(FromFirst()))
	for _, s := range []*seen{a, b} {
		s.waitFor(t, "the message", func(s *seen) bool { return len(s.ids) == 1 })
	}
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	for _, config := range recorder.configs {
		if config.ConsumerName != "acemq-"+stream || !config.ExactConsumerTag {
			t.Errorf("a reader without a name consumed as %q (exact %v); want acemq-%s exactly", config.ConsumerName, config.ExactConsumerTag, stream)
		}
	}
}

// FromLast starts at the last chunk the broker wrote: here the one message
// published after the first fifty were confirmed, then what follows; none of
// the fifty is read.
func TestAReaderFromLastStartsAtTheLastChunk(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "last", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("early", 0, 50)...)
	publish(t, transport, stream, "the-last")
	s := newSeen()
	read(t, transport, stream, s.handler(), Options.From(FromLast()))
	publish(t, transport, stream, "after")
	s.waitFor(t, "the last and the next", func(s *seen) bool { return s.count["after"] > 0 })
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.ids, []string{"the-last", "after"}) || s.offsets[0] != 50 {
		t.Fatalf("a reader from last saw %v (first at offset %v); want [the-last after] from offset 50", s.ids, s.offsets)
	}
}
