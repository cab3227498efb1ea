package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestCommitWriterFixture(t *testing.T) {
	gunit.Run(new(CommitWriterFixture), t)
}

type CommitWriterFixture struct {
	*gunit.Fixture
	h         *harness
	connector messaging.Connector
	raw       *fakeConnection
	writer    messaging.CommitWriter
	channel   *fakeChannel
}

func (f *CommitWriterFixture) Setup() {
	f.h = newHarness()
	f.connector = New(f.h.options()...)
	conn, _ := f.connector.Connect(context.Background())
	f.raw = f.h.dialer.last()
	var err error
	f.writer, err = conn.CommitWriter(context.Background())
	f.So(err, should.BeNil)
	f.channel = receive(f.T(), f.raw.opened, "the channel")
}

func (f *CommitWriterFixture) Teardown() {
	_ = f.connector.Close()
}

func (f *CommitWriterFixture) commit() chan error {
	result := make(chan error, 1)
	go func() { result <- f.writer.Commit() }()
	return result
}

func (f *CommitWriterFixture) TestWriteBuffersWithoutSending() {
	n, err := f.writer.Write(context.Background(), messaging.Dispatch{}, messaging.Dispatch{})

	f.So(n, should.Equal, 2)
	f.So(err, should.BeNil)
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *CommitWriterFixture) TestCommitPublishesTheBufferAndWaitsForEveryConfirm() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"}, messaging.Dispatch{MessageID: "2"})
	result := f.commit()
	f.So(receive(f.T(), f.channel.published, "publish 1").msg.MessageId, should.Equal, "1")
	f.So(receive(f.T(), f.channel.published, "publish 2").msg.MessageId, should.Equal, "2")

	f.channel.Answer(1, true)
	f.channel.Answer(2, true)

	f.So(receive(f.T(), result, "Commit"), should.BeNil)
	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened", "published", "published", "committed"})
	f.So(f.h.monitor.Errors()[3], should.BeNil)
}

func (f *CommitWriterFixture) TestCommitFailsWithAnAccountOfWhatDidNotLand() {
	_, _ = f.writer.Write(context.Background(),
		messaging.Dispatch{MessageID: "1", Mandatory: true},
		messaging.Dispatch{MessageID: "2", Mandatory: true},
	)
	result := f.commit()
	receive(f.T(), f.channel.published, "publish 1")
	receive(f.T(), f.channel.published, "publish 2")

	f.channel.Answer(1, true)
	f.channel.Return("2", "", "")
	f.channel.Answer(2, true)
	err := receive(f.T(), result, "Commit")

	var publishErr *messaging.PublishError
	f.So(errors.As(err, &publishErr), should.BeTrue)
	f.So(publishErr.Results[0].Err, should.BeNil)
	f.So(errors.Is(publishErr.Results[1].Err, messaging.ErrUnroutable), should.BeTrue)
	f.So(f.h.monitor.Errors()[3], should.Equal, err)
}

func (f *CommitWriterFixture) TestCommitIsBoundedByTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		_, _ = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"})
		started := time.Now()

		err := f.writer.Commit() // the publish is written; its confirm never comes

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(len(f.channel.published), should.Equal, 1)
		f.So(errors.Is(err, ErrCommitTimeout), should.BeTrue)
		f.So(f.raw.isSevered(), should.BeTrue)
		f.So(f.h.logs.String(), should.ContainSubstring, `msg="AMQP transaction commit did not complete within [30s]; severing the connection."`)
		f.h.monitor.await(f.T(), "committed")
		f.So(errors.Is(f.h.monitor.Errors()[2], ErrCommitTimeout), should.BeTrue)
	})
}

func (f *CommitWriterFixture) TestRollbackDiscardsTheBuffer() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"})

	f.So(f.writer.Rollback(), should.BeNil)
	f.So(f.writer.Commit(), should.BeNil)

	f.So(len(f.channel.published), should.Equal, 0)
	f.So(f.h.monitor.Events(), should.Resemble, []string{"opened", "rolledback", "committed"})
}

func (f *CommitWriterFixture) TestCommitEmptiesTheBufferEvenWhenItFails() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"})
	result := f.commit()
	receive(f.T(), f.channel.published, "the publish")
	f.channel.Answer(1, false)
	f.So(errors.Is(receive(f.T(), result, "Commit"), messaging.ErrRefused), should.BeTrue)

	f.So(f.writer.Commit(), should.BeNil)
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *CommitWriterFixture) TestCommitOnABlockedConnectionFailsAtOnce() {
	_, _ = f.writer.Write(context.Background(), messaging.Dispatch{MessageID: "1"})
	f.raw.Block(true, "disk alarm")
	f.h.monitor.await(f.T(), "blocked:disk alarm")

	err := f.writer.Commit()

	f.So(errors.Is(err, messaging.ErrPublishingPaused), should.BeTrue)
	f.So(len(f.channel.published), should.Equal, 0)
}

func (f *CommitWriterFixture) TestWriteAfterCloseIsErrClosed() {
	f.So(f.writer.Close(), should.BeNil)

	_, err := f.writer.Write(context.Background(), messaging.Dispatch{})

	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *CommitWriterFixture) TestADispatchOverAWireLimitIsRefusedAloneAtCommit() {
	n, err := f.writer.Write(context.Background(),
		messaging.Dispatch{MessageID: "1"},
		messaging.Dispatch{MessageID: "bad", RoutingKey: strings.Repeat("k", 256)},
		messaging.Dispatch{MessageID: "3"})
	f.So(n, should.Equal, 3)
	f.So(err, should.BeNil)
	result := f.commit()
	f.So(receive(f.T(), f.channel.published, "publish 1").msg.MessageId, should.Equal, "1")
	f.So(receive(f.T(), f.channel.published, "publish 3").msg.MessageId, should.Equal, "3")
	f.channel.Answer(1, true)
	f.channel.Answer(2, true)
	err = receive(f.T(), result, "Commit")

	var publishErr *messaging.PublishError
	f.So(errors.As(err, &publishErr), should.BeTrue)
	f.So(publishErr.Failed(), should.HaveLength, 1)
	f.So(publishErr.Results[1].MessageID, should.Equal, "bad")
	var field *messaging.FieldError
	f.So(errors.As(publishErr.Results[1].Err, &field), should.BeTrue)
	f.So(field.Field, should.Equal, "RoutingKey")
	f.So(field.Size, should.Equal, 256)
	f.So(field.Limit, should.Equal, 255)
	f.So(len(f.channel.published), should.Equal, 0)
	f.So(f.raw.isSevered(), should.BeFalse)
}
