package streams

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestResumeFixture(t *testing.T) {
	gunit.Run(new(ResumeFixture), t)
}

type ResumeFixture struct {
	*gunit.Fixture
	stream    *fakeStream
	reader    *fakeReader
	monitor   *countingMonitor
	connector *resumingConnector
}

func (f *ResumeFixture) Setup() {
	f.stream = &fakeStream{}
	f.reader = &fakeReader{stream: f.stream}
	f.monitor = &countingMonitor{}
	conn := &fakeConnection{supports: true, reader: f.reader}
	f.connector = &resumingConnector{Connector: &fakeConnector{conn: conn}, stream: "orders.log", tag: "projection-a",
		position: newPosition(FromFirst()), monitor: f.monitor}
}

// open opens the stream the way the runtime does on each (re)connection.
func (f *ResumeFixture) open(config messaging.StreamConfig) messaging.Stream {
	ctx := context.Background()
	conn, err := f.connector.Connect(ctx)
	f.So(err, should.BeNil)
	reader, err := conn.Reader(ctx)
	f.So(err, should.BeNil)
	stream, err := reader.Stream(ctx, config)
	f.So(err, should.BeNil)
	return stream
}

func (f *ResumeFixture) lastOffsetArgument() any {
	return f.reader.configs[len(f.reader.configs)-1].ConsumerArguments[OffsetArgument]
}

func (f *ResumeFixture) read(stream messaging.Stream, n int) []messaging.Delivery {
	out := make([]messaging.Delivery, n)
	for i := range out {
		f.So(stream.Read(context.Background(), &out[i]), should.BeNil)
	}
	return out
}

func (f *ResumeFixture) TestTheFirstConsumerStartsAtTheStatedOffsetWithTheExactTag() {
	asked := map[string]any{"x-priority": int32(5)}
	f.open(messaging.StreamConfig{StreamName: "orders.log", ConsumerName: "projection-a", ConsumerArguments: asked})
	config := f.reader.configs[0]
	f.So(config.ConsumerArguments, should.Resemble, map[string]any{"x-priority": int32(5), OffsetArgument: "first"})
	f.So(asked, should.HaveLength, 1) // the caller's map is not changed
	f.So(config.ConsumerName, should.Equal, "projection-a")
	f.So(config.ExactConsumerTag, should.BeTrue)
	f.So(f.monitor.resumed.Load(), should.Equal, 0)
}

func (f *ResumeFixture) TestAnotherQueueOfTheSameConnectionIsLeftAlone() {
	f.open(messaging.StreamConfig{StreamName: "orders.log.parked"})
	f.So(f.reader.configs[0].ConsumerArguments, should.BeNil)
	f.So(f.reader.configs[0].ExactConsumerTag, should.BeFalse)
}

func (f *ResumeFixture) TestAReattachedConsumerStartsAtTheOldestUnsettledOffset() {
	f.stream.queue = []messaging.Delivery{at("a", int64(0)), at("b", int64(1)), at("c", int64(2)), at("d", int64(3))}
	stream := f.open(messaging.StreamConfig{StreamName: "orders.log"})
	got := f.read(stream, 4)
	f.So(stream.Acknowledge(context.Background(), got[0], got[1]), should.BeNil)
	f.So(stream.Acknowledge(context.Background(), got[3]), should.BeNil)

	f.open(messaging.StreamConfig{StreamName: "orders.log"})
	f.So(f.lastOffsetArgument(), should.Equal, int64(2))
	f.So(f.monitor.resumed.Load(), should.Equal, 1)
	f.So(f.monitor.last.Load(), should.Equal, 2)
}

func (f *ResumeFixture) TestWhenEverythingWasSettledItStartsJustAfterTheNewest() {
	f.stream.queue = []messaging.Delivery{at("a", int64(10)), at("b", int64(11))}
	stream := f.open(messaging.StreamConfig{StreamName: "orders.log"})
	got := f.read(stream, 2)
	f.So(stream.Acknowledge(context.Background(), got...), should.BeNil)
	f.open(messaging.StreamConfig{StreamName: "orders.log"})
	f.So(f.lastOffsetArgument(), should.Equal, int64(12))
}

func (f *ResumeFixture) TestAFailedAcknowledgementLeavesTheOffsetsUnsettled() {
	f.stream.queue = []messaging.Delivery{at("a", int64(5)), at("b", int64(6))}
	stream := f.open(messaging.StreamConfig{StreamName: "orders.log"})
	got := f.read(stream, 2)
	f.stream.ackErr = errors.New("channel closed")
	f.So(stream.Acknowledge(context.Background(), got...), should.NotBeNil)
	f.open(messaging.StreamConfig{StreamName: "orders.log"})
	f.So(f.lastOffsetArgument(), should.Equal, int64(5))
}

func (f *ResumeFixture) TestNothingHandedYetStartsAtTheStatedOffsetAgain() {
	f.open(messaging.StreamConfig{StreamName: "orders.log"})
	f.open(messaging.StreamConfig{StreamName: "orders.log"})
	f.So(f.lastOffsetArgument(), should.Equal, "first")
	f.So(f.monitor.resumed.Load(), should.Equal, 0)
}

func (f *ResumeFixture) TestCapabilitiesOfTheConnectionAreFoundThroughTheDecorator() {
	conn, err := f.connector.Connect(context.Background())
	f.So(err, should.BeNil)
	_, ok := messaging.As[supporter](conn)
	f.So(ok, should.BeTrue)
}

func (f *ResumeFixture) TestTheTransportIsAskedThroughItsConnectionWhenTheConnectorDoesNotAnswer() {
	conn := &fakeConnection{supports: false}
	supported, err := Supported(context.Background(), &fakeConnector{conn: conn})
	f.So(err, should.BeNil)
	f.So(supported, should.BeFalse)
	f.So(conn.closed.Load(), should.Equal, 1)

	wrapped := &wrappingConnector{conn: wrappingConnection{Connection: &fakeConnection{supports: true}}}
	supported, _ = Supported(context.Background(), wrapped)
	f.So(supported, should.BeTrue)
}

func (f *ResumeFixture) TestDefaults() {
	c := newConfig(nil)
	f.So(c.prefetch, should.Equal, DefaultPrefetch)
	f.So(c.batch, should.Equal, 1)
	f.So(c.offset.Argument(), should.Equal, "next")
	c = newConfig([]Option{Options.Prefetch(1 << 20), Options.Batch(-1)})
	f.So(c.prefetch, should.Equal, 65535)
	f.So(c.batch, should.Equal, 1)
}

type wrappingConnector struct{ conn messaging.Connection }

func (c *wrappingConnector) Connect(context.Context) (messaging.Connection, error) {
	return c.conn, nil
}
func (c *wrappingConnector) Close() error { return nil }

func (f *ResumeFixture) TestAStartAfterTheAskedOffsetIsWarnedOnceAsARetentionGap() {
	for _, c := range []struct {
		first  int64
		warned string
	}{{first: 12, warned: "asked=5 first=12 missed=7"}, {first: 5}} {
		var logged bytes.Buffer
		f.connector.logger = slog.New(slog.NewTextHandler(&logged, nil))
		f.connector.position = newPosition(FromOffset(5))
		f.stream.queue = []messaging.Delivery{at("a", c.first), at("b", c.first+4)}
		f.read(f.open(messaging.StreamConfig{StreamName: "orders.log"}), 2)
		if c.warned == "" {
			f.So(logged.String(), should.BeEmpty)
			continue
		}
		f.So(strings.Count(logged.String(), "\n"), should.Equal, 1)
		f.So(logged.String(), should.ContainSubstring, `level=WARN msg="Stream reader started after the offset it was asked for; retention removed the messages in between before they were read" stream=orders.log `+c.warned+"\n")
	}
}
