package sqlmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

func TestOutboxFixture(t *testing.T) {
	gunit.Run(new(OutboxFixture), t)
}

type OutboxFixture struct {
	*gunit.Fixture
	t *testing.T // the bubble's
	h *harness
}

// run runs test in a bubble, with a harness over a fresh SQLite database.
func (f *OutboxFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.h = newHarness(t, openSQLite(t))
		test()
	})
}

func (f *OutboxFixture) TestCommittedMessagesArePublishedInOrderAndMarkedDispatched() {
	f.run(func() {
		f.h.Listen()
		f.So(f.h.Commit(messages("a", "b", "c")...), should.BeNil)
		var published []string
		for len(published) < 3 {
			for _, d := range f.h.publisher.Next(f.t) {
				published = append(published, d.MessageID)
				f.So(d.Mandatory, should.BeTrue)
			}
		}
		f.So(published, should.Equal, []string{"a", "b", "c"})
		f.h.monitor.AwaitConfirmed(f.t, 3)
		f.h.processor.Close()
		f.h.AwaitStopped()
		f.So(f.h.count("dispatched_us IS NOT NULL"), should.Equal, 3)
		stored, sent, confirmed, retired := f.h.monitor.counts()
		f.So([]int{stored, sent, confirmed, retired}, should.Equal, []int{3, 3, 3, 0})
		f.So(len(f.h.monitor.lags), should.Equal, 3)
	})
}

// Mandatory is the default: a row nothing is bound to stays in the outbox.
// DropUnroutable names the exchanges whose rows may reach no queue; they are
// published without mandatory, however the dispatch was written.
func (f *OutboxFixture) TestEveryRowIsPublishedMandatoryUnlessItsExchangeMayDropIt() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t), Options.DropUnroutable("audit", "metrics"))
		h.Listen()
		optional := message("optional")
		optional.Topic = "audit"
		plain := message("plain")
		plain.Mandatory = false // as written; the outbox publishes it mandatory all the same
		f.So(h.Commit(optional, plain), should.BeNil)
		published := h.publisher.Next(t)
		f.So(ids(published), should.Equal, []string{"optional", "plain"})
		f.So(published[0].Mandatory, should.BeFalse)
		f.So(published[1].Mandatory, should.BeTrue)
	})
}

func (f *OutboxFixture) TestRollbackStoresNothingAndPublishesNothing() {
	f.run(func() {
		connection, _ := f.h.connector.Connect(context.Background())
		writer, err := connection.CommitWriter(context.Background())
		f.So(err, should.BeNil)
		_, _ = writer.Write(context.Background(), message("a"))
		f.So(writer.Rollback(), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 0)
		f.So(f.h.publisher.Published(), should.BeEmpty)
		_, err = writer.Write(context.Background(), message("b"))
		f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	})
}

func (f *OutboxFixture) TestTheTransactionSlotReceivesTheLiveTransaction() {
	f.run(func() {
		ctx, slot := messaging.WithTransactionSlot(context.Background())
		connection, _ := f.h.connector.Connect(ctx)
		writer, err := connection.CommitWriter(ctx)
		f.So(err, should.BeNil)
		f.So(slot.Tx, should.NotBeNil)
		_, err = slot.Tx.Exec("CREATE TABLE business (id INTEGER)")
		f.So(err, should.BeNil)
		_, _ = writer.Write(ctx, message("a"))
		f.So(writer.Rollback(), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 0)
		var tables int
		_ = f.h.db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE name = 'business'").Scan(&tables)
		f.So(tables, should.Equal, 0)
	})
}

func (f *OutboxFixture) TestReaderRefusesAndPlainWriterCommitsEachCall() {
	f.run(func() {
		f.h.Listen()
		connection, _ := f.h.connector.Connect(context.Background())
		_, err := connection.Reader(context.Background())
		f.So(errors.Is(err, ErrCannotRead), should.BeTrue)
		writer, err := connection.Writer(context.Background())
		f.So(err, should.BeNil)
		n, err := writer.Write(context.Background(), message("a"), message("b"))
		f.So(err, should.BeNil)
		f.So(n, should.Equal, 2)
		f.So(f.h.count("1=1"), should.Equal, 2)
	})
}

func (f *OutboxFixture) TestAMessageWithoutPayloadIsRefusedBeforeAnythingIsStored() {
	f.run(func() {
		connection, _ := f.h.connector.Connect(context.Background())
		writer, _ := connection.CommitWriter(context.Background())
		_, err := writer.Write(context.Background(), messaging.Dispatch{Message: struct{}{}})
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, "serialization.New")
		f.So(writer.Commit(), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 0)
	})
}

func (f *OutboxFixture) TestCommitFillsIdentityAndTimesAtStoreTime() {
	f.run(func() {
		f.h.Listen()
		f.So(f.h.Commit(messaging.Dispatch{Topic: "events", Payload: []byte("x")}), should.BeNil)
		d := f.h.publisher.Next(f.t)[0]
		f.So(d.MessageID, should.HaveLength, 36)
		f.So(d.FirstSeen, should.Equal, time.Now().UTC())
		f.So(d.Timestamp, should.Equal, time.Now().UTC())
	})
}

func (f *OutboxFixture) TestAClosedConnectorRefusesToConnectAndRollsBackOpenWriters() {
	f.run(func() {
		connection, _ := f.h.connector.Connect(context.Background())
		writer, _ := connection.CommitWriter(context.Background())
		_, _ = writer.Write(context.Background(), message("a"))
		f.So(f.h.connector.Close(), should.BeNil)
		f.So(errors.Is(writer.Commit(), messaging.ErrClosed), should.BeTrue)
		_, err := f.h.connector.Connect(context.Background())
		f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
		f.So(f.h.count("1=1"), should.Equal, 0)
	})
}

// Nothing AMQP cannot carry is stored: a 300-byte message id that fits the
// column (100 × "€"), a 300-byte header name, a payload over MaxPayload. Each
// is refused for that Write alone with ErrWireLimit naming the field, through
// both writers, and the transaction stays usable.
func (f *OutboxFixture) TestADispatchBreakingAWireLimitIsRefusedBeforeAnythingIsStored() {
	f.run(func() {
		h := newHarness(f.t, openSQLite(f.t), Options.MaxPayload(1024))
		longID := message("x")
		longID.MessageID = strings.Repeat("€", 100)
		longHeader := message("y")
		longHeader.Headers = map[string]any{strings.Repeat("h", 300): "v"}
		tooLarge := message("z")
		tooLarge.Payload = make([]byte, 1025)
		reserved := message("r")
		reserved.Headers = map[string]any{"X-AceMQ-Id": "forged"}

		connection, _ := h.connector.Connect(context.Background())
		writer, err := connection.CommitWriter(context.Background())
		f.So(err, should.BeNil)
		for field, d := range map[string]messaging.Dispatch{"MessageID": longID, "header name": longHeader, "Payload": tooLarge} {
			n, err := writer.Write(context.Background(), message("fine"), d)
			f.So(n, should.Equal, 0)
			f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
			var fieldErr *messaging.FieldError
			f.So(errors.As(err, &fieldErr), should.BeTrue)
			f.So(fieldErr.Field, should.StartWith, field)
		}
		_, err = writer.Write(context.Background(), reserved)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, "reserved")
		_, err = writer.Write(context.Background(), message("kept"))
		f.So(err, should.BeNil)
		f.So(writer.Commit(), should.BeNil)
		f.So(h.count("1=1"), should.Equal, 1)

		plain, _ := connection.Writer(context.Background())
		_, err = plain.Write(context.Background(), longID)
		f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
		f.So(h.count("1=1"), should.Equal, 1)
	})
}

// The outbox hides no capability of the transport it publishes through.
func TestTheOutboxConnectorUnwrapsToItsTransport(t *testing.T) {
	transport := declaringConnector{}
	connector, processor := New(transport, Options.StorageHandle(openSQLite(t)), Options.Dialect(sqldialect.SQLite))
	defer func() { _ = processor.Close() }()
	if _, ok := messaging.As[interface{ Declares() }](connector); !ok {
		t.Fatal("messaging.As does not find the transport's capability through the outbox")
	}
}

type declaringConnector struct{ messaging.Connector }

func (declaringConnector) Declares() {}
