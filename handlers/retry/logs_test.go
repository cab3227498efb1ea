package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

func (f *HandlerFixture) TestAttemptsBeforeTheLastAreWarningsWithoutTheStackAndTheLastAnErrorWithIt() {
	records := &recordedLogs{}
	f.inner.failures = []any{"one", errors.New("two"), "three"}

	f.handle(Options.Policy(retrypolicy.Fixed(3, time.Second)), Options.Logger(slog.New(records)))

	logged := records.all()
	f.So(len(logged), should.Equal, 3)
	for i, want := range []struct {
		level   slog.Level
		message string
		attempt int64
		failure string
	}{
		{slog.LevelWarn, msgRetrying, 1, "one"},
		{slog.LevelWarn, msgRetrying, 2, "two"},
		{slog.LevelError, msgGivingUp, 3, "three"},
	} {
		got := logged[i]
		f.So(got.level, should.Equal, want.level)
		f.So(got.message, should.Equal, want.message)
		f.So(got.attrs["attempt"].Int64(), should.Equal, want.attempt)
		f.So(got.attrs["attempts"].Int64(), should.Equal, 3)
		f.So(got.attrs["panic"].String(), should.Equal, want.failure)
	}
	f.So(logged[0].attrs["wait"].Duration(), should.Equal, time.Second) // the next delay
	f.So(logged[0].has("stack"), should.BeFalse)
	f.So(logged[1].has("stack"), should.BeFalse)
	f.So(logged[2].has("wait"), should.BeFalse) // nothing follows the last attempt
	f.So(logged[2].attrs["stack"].String(), should.ContainSubstring, "(*fakeHandler).Handle")
}

func (f *HandlerFixture) TestWithDebugOnTheStackOfARetriedAttemptIsADebugLineOfItsOwn() {
	records := &recordedLogs{debug: true}
	f.inner.failures = []any{"one", "two"}

	f.handle(Options.Policy(retrypolicy.Fixed(3, time.Second)), Options.Logger(slog.New(records)))

	var levels []slog.Level
	for _, record := range records.all() {
		levels = append(levels, record.level)
		f.So(record.has("stack"), should.Equal, record.level == slog.LevelDebug)
	}
	f.So(levels, should.Equal, []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelWarn, slog.LevelDebug})
}

func (f *HandlerFixture) TestAFatalFailureIsOneErrorWithItsStackAndNoWarning() {
	records := &recordedLogs{}
	f.inner.failures = []any{messaging.Fatal(errors.New("cannot be done"))}

	f.handle(Options.Logger(slog.New(records)))

	logged := records.all()
	f.So(len(logged), should.Equal, 1)
	f.So(logged[0].level, should.Equal, slog.LevelError)
	f.So(logged[0].message, should.Equal, msgFatal)
	f.So(logged[0].attrs["attempt"].Int64(), should.Equal, 1)
	f.So(logged[0].has("stack"), should.BeTrue)
}

func (f *HandlerFixture) TestWithoutStackTracesTheLastAttemptIsAnErrorWithoutOne() {
	records := &recordedLogs{debug: true}
	f.inner.failures = []any{"one", "two"}

	f.handle(Options.Policy(retrypolicy.Fixed(2, time.Second)), Options.LogStackTrace(false), Options.Logger(slog.New(records)))

	logged := records.all()
	f.So(len(logged), should.Equal, 2) // no DEBUG stack line either
	f.So(logged[1].level, should.Equal, slog.LevelError)
	f.So(logged[0].has("stack"), should.BeFalse)
	f.So(logged[1].has("stack"), should.BeFalse)
}

func (f *HandlerFixture) TestTheBatchsStreamLabelsTheLinesAndReachesAStreamMonitor() {
	records := &recordedLogs{}
	monitor := &fakeStreamMonitor{}
	f.deliveries = []messaging.Delivery{{SourceQueue: "orders"}, {SourceQueue: "orders"}, {SourceQueue: "orders"}}
	f.inner.failures = []any{"one"}

	f.handle(Options.Monitor(monitor), Options.Logger(slog.New(records)))

	f.So(records.all()[0].attrs["stream"].String(), should.Equal, "orders")
	f.So(monitor.attempts, should.Equal, []string{"orders 1 one", "orders 2 <nil>"})
	f.So(monitor.fakeMonitor.attempts, should.BeEmpty) // heard once, through HandleAttemptedOn
}

func (f *HandlerFixture) TestWithoutDeliveriesTheLinesCarryNoStream() {
	records := &recordedLogs{}
	monitor := &fakeStreamMonitor{}
	f.inner.failures = []any{"one"}

	f.handle(Options.Monitor(monitor), Options.Logger(slog.New(records)))

	f.So(records.all()[0].has("stream"), should.BeFalse)
	f.So(monitor.attempts, should.Equal, []string{" 1 one", " 2 <nil>"})
}

//////////////////////////////////////////////////////////////////////////////

// recordedLogs is a slog.Handler that keeps every record with its attributes
// by key, so a test reads levels and attributes instead of matching text.
type recordedLogs struct {
	debug   bool
	mu      sync.Mutex
	records []loggedRecord
}

type loggedRecord struct {
	level   slog.Level
	message string
	attrs   map[string]slog.Value
}

func (r loggedRecord) has(key string) bool {
	_, ok := r.attrs[key]
	return ok
}

func (l *recordedLogs) Enabled(_ context.Context, level slog.Level) bool {
	return l.debug || level >= slog.LevelInfo
}

func (l *recordedLogs) Handle(_ context.Context, record slog.Record) error {
	logged := loggedRecord{level: record.Level, message: record.Message, attrs: map[string]slog.Value{}}
	record.Attrs(func(attr slog.Attr) bool {
		logged.attrs[attr.Key] = attr.Value.Resolve()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, logged)
	return nil
}

func (l *recordedLogs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordedLogs) WithGroup(string) slog.Handler      { return l }

func (l *recordedLogs) all() []loggedRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedRecord(nil), l.records...)
}

// fakeStreamMonitor records each attempt as "stream attempt result".
type fakeStreamMonitor struct {
	fakeMonitor
	attempts []string
}

func (m *fakeStreamMonitor) HandleAttemptedOn(stream string, attempt int, result any) {
	m.attempts = append(m.attempts, fmt.Sprintf("%s %d %v", stream, attempt, result))
}
