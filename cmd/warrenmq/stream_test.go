package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/patterns/streams"
	"github.com/warrenmq/messaging/rabbitmq"
)

func TestStreamTailAgainstTheLocalBroker(t *testing.T) {
	address := testenv.Broker(t)
	name := testenv.Name(t, "cli-stream")
	transport := rabbitmq.New(rabbitmq.Options.Address(address))
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := streams.Declare(ctx, conn, name, streams.Retention{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	declarer, _ := messaging.As[messaging.Declarer](conn)
	t.Cleanup(func() { _ = declarer.DeleteQueue(context.Background(), name) })
	writer, err := conn.CommitWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: name, MessageID: fmt.Sprintf("m%d", i), MessageType: "OrderShipped", Mandatory: true, Payload: []byte(`{"n":` + fmt.Sprint(i) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Commit(); err != nil {
		t.Fatal(err)
	}

	out := &bytes.Buffer{}
	if err := run(ctx, []string{"stream", "tail", "-amqp", address, "-from", "1", "-limit", "3", name}, out, out); err != nil {
		t.Fatalf("tail: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "1\tid=m1\ttype=OrderShipped") || !strings.HasPrefix(lines[2], "3\tid=m3") {
		t.Fatalf("tail from offset 1, three messages, printed:\n%s", out)
	}
	if err := run(ctx, []string{"stream", "tail", "-from", "yesterday", name}, out, out); !errors.Is(err, errUsage) {
		t.Fatalf("a bad -from must be a usage error: %v", err)
	}

	out.Reset()
	if err := run(ctx, []string{"stream", "tail", "-amqp", address, "-from", "first", "-limit", "2", "-json", name}, out, &bytes.Buffer{}); err != nil {
		t.Fatalf("tail -json: %v\n%s", err, out)
	}
	var doc struct {
		Stream   string          `json:"stream"`
		Messages []tailedMessage `json:"messages"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Stream != name || len(doc.Messages) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	if m := doc.Messages[1]; m.Offset == nil || *m.Offset != 1 || m.ID != "m1" || m.Type != "OrderShipped" || m.Body == nil || *m.Body != `{"n":1}` || m.Size != 7 {
		t.Fatalf("the second message: %s", out)
	}
	err = run(ctx, []string{"stream", "tail", "-amqp", address, "-for", "10s", name + "-typo"}, out, &bytes.Buffer{})
	if exitCode(err) != exitNotFound || !strings.Contains(err.Error(), "check the name") {
		t.Fatalf("a stream that does not exist: exit %d, %v", exitCode(err), err)
	}
}
