package faults

import (
	"context"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// The smallest form of what scenario 4 finds: during a memory alarm one
// publish through a rabbitmq CommitWriter must fail within 1 s, and so must
// closing the writer and the connection afterwards. It fails today: the
// commit of a message written just as the broker blocks the connection waits
// the whole broker timeout (rabbitmq/publisher.go, the confirm wait whose
// comment says "A block does not end this wait"); before that wait was changed,
// the commit failed at once but closing the writer's channel on the blocked
// connection waited the broker timeout instead (publisher.close, through
// connection.closeChannel). batch.Writer closes and redials after every such
// error, so each of its calls during an alarm meets a fresh connection and
// takes the broker timeout (30 s by default).
func TestFaultMemoryAlarmCommitFailsWithinASecond(t *testing.T) {
	url := testenv.Disrupt(t)
	queue := testenv.Name(t, "alarm-close")
	exchange := testenv.Name(t, "alarm-close-ex")
	declareQueue(t, url, queue, exchange)
	t.Cleanup(func() {
		if _, err := rabbitmqctl(context.Background(), "set_vm_memory_high_watermark", "0.4"); err != nil {
			t.Errorf("clear the memory alarm: %v", err)
		}
	})
	connector := transport(t, url, testenv.Name(t, "conn"))
	defer func() { _ = connector.Close() }()
	ctx := context.Background()
	connection, err := connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		t.Fatalf("open a commit writer: %v", err)
	}
	clearMemoryAlarm(t) // a previous test's alarm may not have cleared yet
	raiseMemoryAlarm(t)

	began := time.Now()
	_, _ = writer.Write(ctx, messaging.Dispatch{Topic: exchange, RoutingKey: "fault", Payload: []byte("{}")})
	err = writer.Commit()
	commitTook := time.Since(began)
	began = time.Now()
	_ = writer.Close()
	writerCloseTook := time.Since(began)
	began = time.Now()
	_ = connection.Close()
	connectionCloseTook := time.Since(began)
	t.Logf("commit %s (%v), writer close %s, connection close %s", commitTook, err, writerCloseTook, connectionCloseTook)
	if err == nil {
		t.Errorf("the commit succeeded during the memory alarm")
	}
	for _, step := range []struct {
		name string
		took time.Duration
	}{{"commit", commitTook}, {"writer close", writerCloseTook}, {"connection close", connectionCloseTook}} {
		if step.took >= time.Second {
			t.Errorf("%s took %s during the memory alarm; it must return within 1 s", step.name, step.took)
		}
	}
}
