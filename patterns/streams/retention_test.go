package streams

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

func TestRetentionFixture(t *testing.T) {
	gunit.Run(new(RetentionFixture), t)
}

type RetentionFixture struct {
	*gunit.Fixture
}

func (f *RetentionFixture) TestMaxAgeIsRenderedInTheLargestExactUnit() {
	for age, text := range map[time.Duration]string{
		7 * 24 * time.Hour:                    "7D",
		24 * time.Hour:                        "1D",
		90 * time.Minute:                      "90m",
		time.Hour:                             "1h",
		36 * time.Hour:                        "36h",
		24*time.Hour + time.Minute:            "1441m",
		45 * time.Second:                      "45s",
		1500 * time.Millisecond:               "1s",
		500 * time.Millisecond:                "1s",
		2*time.Hour + 30*time.Second:          "7230s",
		365 * 24 * time.Hour:                  "365D",
		3*24*time.Hour + 12*time.Hour:         "84h",
		30*time.Minute + 500*time.Millisecond: "30m",
	} {
		f.So(MaxAgeText(age), should.Equal, text)
	}
}

func (f *RetentionFixture) TestOnlyWhatIsSetIsDeclared() {
	f.So(Retention{}.Arguments(), should.BeEmpty)
	f.So(Retention{}.IsZero(), should.BeTrue)
	f.So(Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 30}.Arguments(), should.Resemble,
		map[string]any{"x-max-age": "7D", "x-max-length-bytes": int64(10 << 30)})
	f.So(Retention{SegmentBytes: 100 << 20}.Arguments(), should.Resemble,
		map[string]any{"x-stream-max-segment-size-bytes": int64(100 << 20)})
}

func (f *RetentionFixture) TestTheQueueIsADurableStream() {
	q := Queue("orders.log", Retention{MaxAge: time.Hour})
	f.So(q, should.Resemble, messaging.Queue{Name: "orders.log", Type: messaging.QueueStream, Durable: true,
		Arguments: map[string]any{"x-max-age": "1h"}})
	args, err := messaging.QueueArguments(q)
	f.So(err, should.BeNil)
	f.So(args["x-queue-type"], should.Equal, "stream")
	f.So(Plan("orders.log", Retention{}).String(), should.ContainSubstring, "orders.log (stream, durable")
}

func (f *RetentionFixture) TestOnMemoryTheDeclarationIsRecordedAndReadIsRefusedBeforeAnything() {
	broker := memory.New()
	defer broker.Close()
	ctx := context.Background()
	conn, err := broker.Connect(ctx)
	f.So(err, should.BeNil)
	defer conn.Close()
	f.So(Declare(ctx, conn, "orders.log", Retention{MaxAge: time.Hour}), should.BeNil)

	_, err = Read(ctx, broker, "orders.log", messaging.HandlerFunc(func(context.Context, ...any) {}))
	f.So(errors.Is(err, ErrUnsupported), should.BeTrue)
	f.So(err.Error(), should.Equal, "acemq: this transport does not support streams; they are a RabbitMQ queue type and the in-memory transport has no equivalent")
	declarer, _ := messaging.As[messaging.Declarer](conn)
	_, err = declarer.InspectQueue(ctx, "orders.log.parked")
	f.So(errors.Is(err, messaging.ErrNotFound), should.BeTrue)
}

func (f *RetentionFixture) TestDeclareNeedsADeclarer() {
	err := Declare(context.Background(), plainConnection{}, "orders.log", Retention{})
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "cannot declare topology")
}

// TestAStreamWithNoRetentionIsWarnedOnceWithTheStreamAsAnAttribute swaps
// slog.Default, where Declare warns, so it is a plain test: it runs before
// the package's parallel tests, never beside them.
func TestAStreamWithNoRetentionIsWarnedOnceWithTheStreamAsAnAttribute(t *testing.T) {
	var logged bytes.Buffer
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(previous) })
	broker := memory.New()
	defer broker.Close()
	conn, err := broker.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	for name, r := range map[string]Retention{"orders.kept": {MaxAge: time.Hour}, "orders.log": {}} {
		if err := Declare(context.Background(), conn, name, r); err != nil {
			t.Fatal(err)
		}
	}

	want := `level=WARN msg="Stream has no retention; set Retention.MaxAge or MaxBytes before a full disk blocks every publisher on the node" stream=orders.log` + "\n"
	if got := logged.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, want) {
		t.Fatalf("Declare logged %q; want one line ending %q", got, want)
	}
}
