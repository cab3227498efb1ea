package claimcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// document is the message of the broker test.
type document struct {
	ID   string `json:"id"`
	Blob string `json:"blob"`
}

// documentOfSize is a document whose JSON is exactly size bytes.
func documentOfSize(id string, size int) document {
	empty, _ := json.Marshal(document{ID: id})
	return document{ID: id, Blob: strings.Repeat("x", size-len(empty))}
}

// octets is a delegate for payloads that are bytes already (a scan, a PDF):
// the 20 MiB message goes through it, so the test measures the store and the
// broker rather than encoding/json under the race detector.
type octets struct{}

func (octets) ContentType() string { return "application/octet-stream" }

func (octets) Serialize(message any) ([]byte, error) {
	b, ok := message.([]byte)
	if !ok {
		return nil, fmt.Errorf("octets writes []byte, not %T", message)
	}
	return b, nil
}

func (octets) Deserialize(payload []byte, target any) error {
	p, ok := target.(*[]byte)
	if !ok {
		return fmt.Errorf("octets reads into *[]byte, not %T", target)
	}
	*p = append([]byte(nil), payload...)
	return nil
}

// flakyStore fails Get on chosen keys (every key's first reads when first is
// set) a set number of times, then answers; it fails with its err, or
// errStoreDown.
type flakyStore struct {
	Store
	mu    sync.Mutex
	fails map[string]int
	gets  map[string]int
	first int
	err   func(key string) error
}

func (s *flakyStore) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	if _, seen := s.gets[key]; !seen && s.first > 0 {
		s.fails[key] = s.first
	}
	s.gets[key]++
	fail := s.fails[key] > 0
	if fail {
		s.fails[key]--
	}
	s.mu.Unlock()
	if fail && s.err != nil {
		return nil, false, s.err(key)
	}
	if fail {
		return nil, false, errStoreDown
	}
	return s.Store.Get(key)
}

func (s *flakyStore) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[key]
}

// TestClaimCheckOnTheBroker publishes through the codec over the filesystem
// store and consumes with the streaming runtime on the local RabbitMQ: a
// 20 MiB scan (raw bytes) and a 200 KiB JSON document go through the store; payloads of
// threshold-1, threshold and threshold+1 bytes take their forms; bodies
// framed by hand as another AceMQ library writes them, and an unframed body
// as a live queue still carries, decode; a claim whose Get fails twice is
// held and handled, one whose Get always fails with an error the store marks
// messaging.Retryable is dead-lettered when the budget is spent; a key the
// store lacks is parked with a reason that names it. Every message is counted
// by id.
func TestClaimCheckOnTheBroker(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "claimcheck")
	exchange := testenv.Name(t, "claimcheck-x")
	typeName := "claimcheck.document"
	const attempts = 4
	budget := retrypolicy.Fixed(attempts, 10*time.Millisecond)
	t.Cleanup(func() {
		testenv.DeleteTopology(url, []string{exchange}, append(rungNames(budget, queue), queue, queue+".dlq", queue+".parked")...)
	})

	dir := t.TempDir()
	files, err := NewFilesystemStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeByHand := func(content string) string { // as another library's store would
		key := messaging.NewID()
		if err := os.WriteFile(filepath.Join(dir, key), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return key
	}
	handClaim := writeByHand(`{"id":"hand-claim","blob":"from java"}`)
	flakyKey := writeByHand(`{"id":"flaky","blob":"answered on the third get"}`)
	missingKey := messaging.NewID()
	downKey := writeByHand(`{"id":"down","blob":"never read"}`)
	flaky := &flakyStore{Store: files, fails: map[string]int{flakyKey: 2, downKey: 1 << 30}, gets: map[string]int{}}
	flaky.err = func(key string) error {
		if key == downKey { // a store that says its failure is the message's to pay for
			return messaging.Retryable(errStoreDown)
		}
		return errStoreDown
	}

	publisherCodec, _ := New(nil, files)
	consumerCodec, _ := New(nil, flaky)
	bytesOut, _ := New(octets{}, files)
	bytesIn, _ := New(octets{}, flaky)
	const blobType = "claimcheck.scan"
	quiet := slog.New(slog.DiscardHandler)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })

	want := map[string]int{ // id -> the blob length the handler must see
		"huge":        20 << 20,
		"200k":        200 << 10,
		"below":       -1,
		"at":          -1,
		"above":       -1,
		"hand-inline": len("from ruby"),
		"hand-claim":  len("from java"),
		"unframed":    len("before the codec"),
		"flaky":       len("answered on the third get"),
	}
	claimed := map[string]bool{"huge": true, "200k": true, "at": true, "above": true, "hand-claim": true, "flaky": true}
	var mu sync.Mutex
	handled := map[string]int{}
	problems := []string{}
	allHandled, once := make(chan struct{}), sync.Once{}
	handler := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, message := range messages {
			d := message.(messaging.Delivery)
			mu.Lock()
			handled[d.MessageID]++
			if len(handled) >= len(want) {
				once.Do(func() { close(allHandled) })
			}
			if d.MessageID == "huge" {
				scan, _ := d.Message.([]byte)
				if len(scan) != 20<<20 || !IsClaimChecked(d.Payload) || d.ContentType != "application/octet-stream" {
					problems = append(problems, fmt.Sprintf("the 20 MiB scan arrived as %d bytes from a body of %d bytes (%s): %v", len(scan), len(d.Payload), d.ContentType, d.Undecodable))
				}
				mu.Unlock()
				continue
			}
			doc, ok := d.Message.(document)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s did not decode: %v", d.MessageID, d.Undecodable))
			} else if doc.ID != d.MessageID || (want[d.MessageID] >= 0 && len(doc.Blob) != want[d.MessageID]) {
				problems = append(problems, fmt.Sprintf("%s decoded as id %q with %d bytes of blob", d.MessageID, doc.ID, len(doc.Blob)))
			}
			if IsClaimChecked(d.Payload) != claimed[d.MessageID] {
				problems = append(problems, fmt.Sprintf("%s arrived with a body of %d bytes, claim checked %v; want %v", d.MessageID, len(d.Payload), IsClaimChecked(d.Payload), claimed[d.MessageID]))
			}
			if d.Claim != "" {
				problems = append(problems, fmt.Sprintf("%s arrived with x-acemq-claim %q; the codec writes none", d.MessageID, d.Claim))
			}
			if d.ContentType != serialization.JSONContentType {
				problems = append(problems, fmt.Sprintf("%s has content type %q", d.MessageID, d.ContentType))
			}
			mu.Unlock()
		}
	})

	consuming := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{typeName: reflect.TypeOf(document{}), blobType: reflect.TypeOf([]byte{})}),
		serialization.Options.AddDeserializer(consumerCodec),
		serialization.Options.AddDeserializer(bytesIn),
		serialization.Options.Logger(quiet))
	consumer := streaming.New(consuming, streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(handler, handler),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(budget),
		)))
	listening := make(chan struct{})
	go func() { consumer.Listen(); close(listening) }()
	defer func() {
		_ = consumer.Close()
		select {
		case <-listening:
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return after Close")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	publishing := serialization.New(transport,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(document{}): typeName}),
		serialization.Options.Serializer(publisherCodec),
		serialization.Options.Logger(quiet))
	encoded := []messaging.Dispatch{
		{Topic: exchange, MessageID: "200k", Mandatory: true, Message: document{ID: "200k", Blob: strings.Repeat("y", want["200k"])}},
	}
	for id, size := range map[string]int{"below": DefaultThreshold - 1, "at": DefaultThreshold, "above": DefaultThreshold + 1} {
		encoded = append(encoded, messaging.Dispatch{Topic: exchange, MessageID: id, Mandatory: true, Message: documentOfSize(id, size)})
	}
	began := time.Now()
	write(t, ctx, publishing, encoded)
	scans := serialization.New(transport,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf([]byte{}): blobType}),
		serialization.Options.Serializer(bytesOut),
		serialization.Options.Logger(quiet))
	scan := make([]byte, want["huge"])
	for i := range scan {
		scan[i] = byte(i)
	}
	write(t, ctx, scans, []messaging.Dispatch{{Topic: exchange, MessageID: "huge", Mandatory: true, Message: scan}})
	t.Logf("encoded and published in %s", time.Since(began))

	raw := func(id string, body []byte) messaging.Dispatch {
		return messaging.Dispatch{Topic: exchange, MessageID: id, MessageType: typeName, ContentType: serialization.JSONContentType, Mandatory: true, Payload: body}
	}
	write(t, ctx, transport, []messaging.Dispatch{
		raw("hand-inline", append([]byte{0xAC, 0x01, 0x00}, `{"id":"hand-inline","blob":"from ruby"}`...)),
		raw("hand-claim", append([]byte{0xAC, 0x01, 0x01}, handClaim...)),
		raw("unframed", []byte(`{"id":"unframed","blob":"before the codec"}`)),
		raw("flaky", append([]byte{0xAC, 0x01, 0x01}, flakyKey...)),
		raw("missing", append([]byte{0xAC, 0x01, 0x01}, missingKey...)),
		raw("down", append([]byte{0xAC, 0x01, 0x01}, downKey...)),
	})

	parked := waitForOne(t, ctx, url, queue+".parked")
	deadLettered := waitForOne(t, ctx, url, queue+".dlq")
	t.Logf("parked after %s", time.Since(began))
	select {
	case <-allHandled:
	case <-ctx.Done():
	}

	t.Logf("handled after %s", time.Since(began))
	mu.Lock()
	defer mu.Unlock()
	for _, problem := range problems {
		t.Error(problem)
	}
	for id := range want {
		if handled[id] != 1 {
			t.Errorf("%s was handled %d times; want once", id, handled[id])
		}
	}
	if len(handled) != len(want) {
		t.Errorf("handled %v; want exactly %d ids", handled, len(want))
	}
	if got := flaky.count(flakyKey); got != 3 {
		t.Errorf("the flaky store was asked for its key %d times; want 3 (two failures held, then read)", got)
	}
	if got := flaky.count(downKey); got != attempts {
		t.Errorf("the store that always refused (Retryable) was asked %d times; want the policy's %d attempts", got, attempts)
	}
	dlqReason, _ := deadLettered.Headers["x-acemq-error"].(string)
	if deadLettered.MessageId != "down" || !strings.Contains(dlqReason, fmt.Sprintf("cannot read the claim check %q from the store", downKey)) {
		t.Errorf("dead-lettered %q with reason %q; want the message whose store never answered, with the AceMQ text naming %s", deadLettered.MessageId, dlqReason, downKey)
	}
	if got := flaky.count(missingKey); got != 1 {
		t.Errorf("the missing key was looked up %d times; want once (fatal: no retry)", got)
	}
	if parked.MessageId != "missing" {
		t.Errorf("parked %q; want the message whose key the store lacks", parked.MessageId)
	}
	reason, _ := parked.Headers["x-acemq-error"].(string)
	if !strings.Contains(reason, fmt.Sprintf("the claim check %q is not in the store", missingKey)) {
		t.Errorf("the parked message's reason is %q; want the AceMQ text naming the key %s", reason, missingKey)
	}
	if !IsClaimChecked(parked.Body) {
		t.Errorf("the parked body is not the claim check as it arrived: % x", parked.Body)
	}
	t.Logf("handled %d messages once each (%d MiB through the store), parked 1 (missing key), dead-lettered 1 (store down, %d gets); the flaky key was read %d times", len(handled), want["huge"]>>20, flaky.count(downKey), flaky.count(flakyKey))
}

func write(t *testing.T, ctx context.Context, connector messaging.Connector, dispatches []messaging.Dispatch) {
	t.Helper()
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		t.Fatal(err)
	}
}

// waitForOne takes the one message expected in a set-aside queue (declared
// by the consumer, which has started), consuming it rather than polling.
func waitForOne(t *testing.T, ctx context.Context, url, queue string) amqp.Delivery {
	t.Helper()
	select {
	case d := <-watch(t, url, queue):
		return d
	case <-ctx.Done():
		t.Fatalf("nothing reached %s", queue)
		return amqp.Delivery{}
	}
}

func rungNames(policy retrypolicy.Policy, queue string) []string {
	var names []string
	for _, rung := range policy.Rungs(queue) {
		names = append(names, rung.Name)
	}
	return names
}
