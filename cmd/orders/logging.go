package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/warrenmq/messaging/internal/redact"
)

// redactingHandler masks the passwords of the service's addresses in every log
// record, whoever wrote it (the service, the library, the MySQL driver, the
// HTTP server): the message, every string, error or other value attribute, in
// groups too. It is how no log line can print a credential, by construction.
type redactingHandler struct {
	inner   slog.Handler
	secrets []string // the addresses whose passwords are masked
}

func newRedactingHandler(inner slog.Handler, addresses ...string) slog.Handler {
	return redactingHandler{inner: inner, secrets: addresses}
}

func (h redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h redactingHandler) Handle(ctx context.Context, record slog.Record) error {
	out := slog.NewRecord(record.Time, record.Level, h.text(record.Message), record.PC)
	record.Attrs(func(attr slog.Attr) bool {
		out.AddAttrs(h.attr(attr))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, attr := range attrs {
		masked[i] = h.attr(attr)
	}
	return redactingHandler{inner: h.inner.WithAttrs(masked), secrets: h.secrets}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

func (h redactingHandler) attr(attr slog.Attr) slog.Attr {
	value := attr.Value.Resolve()
	switch value.Kind() {
	case slog.KindString:
		return slog.String(attr.Key, h.text(value.String()))
	case slog.KindAny:
		return slog.String(attr.Key, h.text(fmt.Sprint(value.Any())))
	case slog.KindGroup:
		group := value.Group()
		masked := make([]any, len(group))
		for i, member := range group {
			masked[i] = h.attr(member)
		}
		return slog.Group(attr.Key, masked...)
	default:
		return slog.Attr{Key: attr.Key, Value: value}
	}
}

func (h redactingHandler) text(text string) string { return redact.Text(text, h.secrets...) }

// driverLogger sends the MySQL driver's own lines ("[mysql] ...") through the
// service's logger, so they are redacted too.
type driverLogger struct{ logger *slog.Logger }

func (l driverLogger) Print(v ...any) { l.logger.Warn("MySQL driver: " + fmt.Sprint(v...)) }
