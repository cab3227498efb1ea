// Package redial keeps the one lazily dialled connection (and, for those that
// want it, the one commit writer on it) of each component that holds a
// connection of its own: batch (the one redialling publisher, which
// handlers/deadletter and the patterns publish through),
// handlers/transactional (a commit writer per batch) and status (its probe). It
// dials on first use, hands the same connection to every later call, and
// forgets and closes it when a caller reports it broken, so the next call
// dials again. It does not serialise publishes: its users do that, each by
// its own rule.
package redial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/warrenmq/messaging"
)

// Link is one kept connection to a Connector and, optionally, one kept
// CommitWriter on it. The zero value is not usable; call New. Safe for
// concurrent use.
type Link struct {
	connector messaging.Connector
	name      string

	mu         sync.Mutex
	connection messaging.Connection
	writer     messaging.CommitWriter
	shared     messaging.Writer // a plain Writer, for callers that publish concurrently
	closed     bool
}

// New returns a Link over connector that dials nothing until first used.
// name starts every error it returns ("batch writer", "deadletter", ...).
func New(connector messaging.Connector, name string) *Link {
	return &Link{connector: connector, name: name}
}

// Connection returns the kept connection, dialling one when there is none.
// The dial is bounded by ctx and by the transport's connect timeout.
func (l *Link) Connection(ctx context.Context) (messaging.Connection, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connect(ctx)
}

// Writer returns the kept commit writer and the connection it is on, opening
// what is missing. A writer that cannot be opened leaves the connection kept
// (the caller decides, with Discard, whether it is broken).
func (l *Link) Writer(ctx context.Context) (messaging.CommitWriter, messaging.Connection, error) {
	return keep(ctx, l, &l.writer, "commit writer", messaging.Connection.CommitWriter)
}

// Shared returns the kept plain Writer and the connection it is on, opening
// what is missing. Unlike a CommitWriter it is safe for concurrent Write
// calls: the transport pipelines their publishes and confirms on one channel,
// so many callers of one message each do not wait for each other's round
// trips. A writer that cannot be opened leaves the connection to the caller.
func (l *Link) Shared(ctx context.Context) (messaging.Writer, messaging.Connection, error) {
	return keep(ctx, l, &l.shared, "writer", messaging.Connection.Writer)
}

// DropShared closes writer, if it is still the kept shared one, and keeps the
// connection (see DropWriter).
func (l *Link) DropShared(writer messaging.Writer) { drop(l, &l.shared, writer) }

// closer is what a Link keeps on its connection: a Writer or a CommitWriter.
type closer interface {
	comparable
	Close() error
}

// keep returns *kept and the connection, or opens a writer with open on the
// kept connection (dialling it first if need be) and keeps it in *kept.
func keep[W closer](ctx context.Context, l *Link, kept *W, what string, open func(messaging.Connection, context.Context) (W, error)) (W, messaging.Connection, error) {
	var none W
	l.mu.Lock()
	defer l.mu.Unlock()
	if *kept != none {
		return *kept, l.connection, nil
	}
	connection, err := l.connect(ctx)
	if err != nil {
		return none, nil, err
	}
	writer, err := open(connection, ctx)
	if err != nil {
		return none, connection, fmt.Errorf("%s: open a %s: %w", l.name, what, err)
	}
	if writer == none {
		return none, connection, fmt.Errorf("%s: the connection returned a nil %s", l.name, what)
	}
	*kept = writer
	return writer, connection, nil
}

// drop closes writer and forgets it if it is still *kept; a writer a later
// call has already replaced is left alone.
func drop[W closer](l *Link, kept *W, writer W) {
	var none W
	if writer == none {
		return
	}
	l.mu.Lock()
	if *kept != writer {
		l.mu.Unlock()
		return
	}
	*kept = none
	l.mu.Unlock()
	_ = writer.Close()
}

func (l *Link) connect(ctx context.Context) (messaging.Connection, error) {
	if l.closed {
		return nil, fmt.Errorf("%s: %w", l.name, messaging.ErrClosed)
	}
	if l.connection != nil {
		return l.connection, nil
	}
	connection, err := l.connector.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", l.name, err)
	}
	if connection == nil {
		return nil, fmt.Errorf("%s: the connector returned a nil connection", l.name)
	}
	l.connection = connection
	return connection, nil
}

// Discard closes connection, with the writer kept on it, if it is still the
// kept one; the next call dials again. A connection that a later call has
// already replaced is left alone, so a caller that gave up late cannot cut
// the connection of the one that followed it. A nil connection does nothing.
func (l *Link) Discard(connection messaging.Connection) {
	if connection == nil {
		return
	}
	l.mu.Lock()
	if l.connection != connection {
		l.mu.Unlock()
		return
	}
	writer, shared, _ := l.take()
	l.mu.Unlock()
	_ = l.closeKept(writer, shared, connection) // the link is being discarded as broken: its errors add nothing
}

// DropWriter closes writer, if it is still the kept one, and keeps the
// connection: the next Writer opens a new channel on it. For a channel the
// broker keeps answering badly while the connection is sound (RabbitMQ 3.10
// nacks every publish of a channel that was publishing to a quorum queue
// whose leader died, while a new channel on the same node is acked).
func (l *Link) DropWriter(writer messaging.CommitWriter) { drop(l, &l.writer, writer) }

// Reset closes whatever is kept; the next call dials again.
func (l *Link) Reset() {
	l.mu.Lock()
	writer, shared, connection := l.take()
	l.mu.Unlock()
	_ = l.closeKept(writer, shared, connection) // the link is being discarded as broken: its errors add nothing
}

// Sever forgets whatever is kept and closes it in the background, which
// makes a broker call pending on it return: for a caller whose context ended
// while a call it cannot interrupt otherwise is in flight. The close is
// bounded by the transport's own close timeout.
func (l *Link) Sever() {
	l.mu.Lock()
	writer, shared, connection := l.take()
	l.mu.Unlock()
	if writer != nil || shared != nil || connection != nil {
		go func() { _ = l.closeKept(writer, shared, connection) }()
	}
}

// Close closes whatever is kept and refuses later calls with
// messaging.ErrClosed. It does not wait for calls in flight: closing the
// connection under them makes them return.
func (l *Link) Close() error {
	l.mu.Lock()
	writer, shared, connection := l.take()
	l.closed = true
	l.mu.Unlock()
	return l.closeKept(writer, shared, connection)
}

// take forgets whatever is kept and returns it, for the caller to close once
// the lock is released. The caller holds l.mu.
func (l *Link) take() (messaging.CommitWriter, messaging.Writer, messaging.Connection) {
	writer, shared, connection := l.writer, l.shared, l.connection
	l.connection, l.writer, l.shared = nil, nil, nil
	return writer, shared, connection
}

// closeKept closes what take returned, the writers before their connection,
// and returns what failed (an ErrClosed is not a failure).
func (l *Link) closeKept(writer messaging.CommitWriter, shared messaging.Writer, connection messaging.Connection) error {
	var errs []error
	for _, part := range [...]struct {
		what   string
		closer io.Closer
	}{{"writer", shared}, {"commit writer", writer}, {"connection", connection}} {
		if part.closer == nil {
			continue
		}
		if err := part.closer.Close(); err != nil && !errors.Is(err, messaging.ErrClosed) {
			errs = append(errs, fmt.Errorf("%s: close the %s: %w", l.name, part.what, err))
		}
	}
	return errors.Join(errs...)
}
