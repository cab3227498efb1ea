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
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writer != nil {
		return l.writer, l.connection, nil
	}
	connection, err := l.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return nil, connection, fmt.Errorf("%s: open a commit writer: %w", l.name, err)
	}
	if writer == nil {
		return nil, connection, fmt.Errorf("%s: the connection returned a nil commit writer", l.name)
	}
	l.writer = writer
	return writer, connection, nil
}

// Shared returns the kept plain Writer and the connection it is on, opening
// what is missing. Unlike a CommitWriter it is safe for concurrent Write
// calls: the transport pipelines their publishes and confirms on one channel,
// so many callers of one message each do not wait for each other's round
// trips. A writer that cannot be opened leaves the connection to the caller.
func (l *Link) Shared(ctx context.Context) (messaging.Writer, messaging.Connection, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shared != nil {
		return l.shared, l.connection, nil
	}
	connection, err := l.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	writer, err := connection.Writer(ctx)
	if err != nil {
		return nil, connection, fmt.Errorf("%s: open a writer: %w", l.name, err)
	}
	if writer == nil {
		return nil, connection, fmt.Errorf("%s: the connection returned a nil writer", l.name)
	}
	l.shared = writer
	return writer, connection, nil
}

// DropShared closes writer, if it is still the kept shared one, and keeps the
// connection (see DropWriter).
func (l *Link) DropShared(writer messaging.Writer) {
	if writer == nil {
		return
	}
	l.mu.Lock()
	if l.shared != writer {
		l.mu.Unlock()
		return
	}
	l.shared = nil
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
	writer, shared := l.writer, l.shared
	l.connection, l.writer, l.shared = nil, nil, nil
	l.mu.Unlock()
	closeAll(writer, shared, connection)
}

// DropWriter closes writer, if it is still the kept one, and keeps the
// connection: the next Writer opens a new channel on it. For a channel the
// broker keeps answering badly while the connection is sound (RabbitMQ 3.10
// nacks every publish of a channel that was publishing to a quorum queue
// whose leader died, while a new channel on the same node is acked).
func (l *Link) DropWriter(writer messaging.CommitWriter) {
	if writer == nil {
		return
	}
	l.mu.Lock()
	if l.writer != writer {
		l.mu.Unlock()
		return
	}
	l.writer = nil
	l.mu.Unlock()
	_ = writer.Close()
}

// Reset closes whatever is kept; the next call dials again.
func (l *Link) Reset() {
	l.mu.Lock()
	writer, shared, connection := l.writer, l.shared, l.connection
	l.connection, l.writer, l.shared = nil, nil, nil
	l.mu.Unlock()
	closeAll(writer, shared, connection)
}

// Sever forgets whatever is kept and closes it in the background, which
// makes a broker call pending on it return: for a caller whose context ended
// while a call it cannot interrupt otherwise is in flight. The close is
// bounded by the transport's own close timeout.
func (l *Link) Sever() {
	l.mu.Lock()
	writer, shared, connection := l.writer, l.shared, l.connection
	l.connection, l.writer, l.shared = nil, nil, nil
	l.mu.Unlock()
	if writer != nil || shared != nil || connection != nil {
		go closeAll(writer, shared, connection)
	}
}

// Close closes whatever is kept and refuses later calls with
// messaging.ErrClosed. It does not wait for calls in flight: closing the
// connection under them makes them return.
func (l *Link) Close() error {
	l.mu.Lock()
	writer, shared, connection := l.writer, l.shared, l.connection
	l.connection, l.writer, l.shared, l.closed = nil, nil, nil, true
	l.mu.Unlock()
	var err error
	if shared != nil {
		if closeErr := shared.Close(); closeErr != nil && !errors.Is(closeErr, messaging.ErrClosed) {
			err = fmt.Errorf("%s: close the writer: %w", l.name, closeErr)
		}
	}
	if writer != nil {
		if closeErr := writer.Close(); closeErr != nil && !errors.Is(closeErr, messaging.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("%s: close the commit writer: %w", l.name, closeErr))
		}
	}
	if connection != nil {
		if closeErr := connection.Close(); closeErr != nil && !errors.Is(closeErr, messaging.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("%s: close the connection: %w", l.name, closeErr))
		}
	}
	return err
}

func closeAll(writer messaging.CommitWriter, shared messaging.Writer, connection messaging.Connection) {
	if writer != nil {
		_ = writer.Close() // the connection is being discarded as broken: its error adds nothing
	}
	if shared != nil {
		_ = shared.Close()
	}
	if connection != nil {
		_ = connection.Close()
	}
}
