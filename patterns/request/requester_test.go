package request

import (
	"testing"

	"github.com/warrenmq/messaging"
)

// TestReplyQueueDeclarations: a generated reply queue is transient,
// exclusive, auto-delete and classic, with no dead-letter arguments; a named
// one is durable and quorum, with no expiry.
func TestReplyQueueDeclarations(t *testing.T) {
	generated := (&Requester[int, int]{queue: "acemq-reply-x", generated: true}).streamConfig()
	source, err := generated.SourceQueue()
	if err != nil {
		t.Fatal(err)
	}
	if source.Durable || !source.Exclusive || !source.AutoDelete || source.Type != messaging.QueueClassic || len(source.Arguments) != 0 || generated.DeadLetters {
		t.Errorf("generated reply queue declared as %+v (dead letters %t)", source, generated.DeadLetters)
	}
	named := (&Requester[int, int]{queue: "my-replies"}).streamConfig()
	if source, err = named.SourceQueue(); err != nil {
		t.Fatal(err)
	}
	if !source.Durable || source.Exclusive || source.AutoDelete || source.Type != messaging.QueueQuorum || len(source.Arguments) != 0 {
		t.Errorf("named reply queue declared as %+v", source)
	}
}
