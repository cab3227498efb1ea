// Package rabbitmq is the RabbitMQ transport: a messaging.Connector over
// github.com/rabbitmq/amqp091-go with publisher confirms, mandatory returns matched
// to their messages, blocked-connection notifications, and a bound on every wait on
// the broker. Configure New with Options (OptionSet lists them).
package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

type connector struct {
	config *config

	mu     sync.Mutex
	closed bool
	open   map[*connection]struct{}
	// next is the index of the address Connect dials first: the one that
	// last answered, or the one after it once a connection from it was lost.
	next int
}

// New returns a Connector whose every Connect dials a new AMQP connection. Its
// Close closes every connection it opened that is still open.
func New(options ...Option) messaging.Connector {
	cfg := newConfig(options)
	return &connector{config: &cfg, open: map[*connection]struct{}{}}
}

// Connect dials the broker and completes the handshake within the broker timeout.
// It does not retry: a refused credential or an unreachable broker is returned at
// once, for the caller to decide.
func (c *connector) Connect(ctx context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("connect through a closed rabbitmq connector; create a new one with rabbitmq.New: %w", messaging.ErrClosed)
	}

	raw, index, err := c.dial(ctx)
	c.config.monitor.ConnectionOpened(err)
	if err != nil {
		return nil, err
	}
	conn := newConnection(c.config, raw, func(conn *connection, lost bool) { c.forget(conn, lost, index) })

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		return nil, fmt.Errorf("the rabbitmq connector was closed while connecting: %w", messaging.ErrClosed)
	}
	c.open[conn] = struct{}{}
	c.mu.Unlock()
	return conn, nil
}

// forget drops a connection that ended; when the broker or the network ended
// it, the next Connect starts at the address after the one it came from.
func (c *connector) forget(conn *connection, lost bool, index int) {
	c.mu.Lock()
	delete(c.open, conn)
	if lost && c.next == index {
		c.next = (index + 1) % len(c.config.addresses)
	}
	c.mu.Unlock()
}

// Close closes every open connection; later Connects fail with messaging.ErrClosed.
func (c *connector) Close() error {
	c.mu.Lock()
	c.closed = true
	open := make([]*connection, 0, len(c.open))
	for conn := range c.open {
		open = append(open, conn)
	}
	c.mu.Unlock()

	var errs []error
	for _, conn := range open {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}

// dial dials the addresses in turn from c.next until one answers, and
// returns the connection and the index of its address. Every error it returns,
// and so every log line and monitor callback that quotes one, has every
// address's credentials masked.
func (c *connector) dial(ctx context.Context) (adapter.Connection, int, error) {
	addresses := c.config.addresses
	for _, address := range addresses {
		if _, err := amqp.ParseURI(address); err != nil {
			return nil, 0, malformedAddress(address, err) // a configuration mistake: no node can fix it
		}
	}
	c.mu.Lock()
	start := c.next
	c.mu.Unlock()
	n := len(addresses)
	var failures []error
	for k := range n {
		i := (start + k) % n
		conn, err := c.dialUnmasked(ctx, addresses[i])
		if err == nil {
			c.mu.Lock()
			c.next = i
			c.mu.Unlock()
			if n > 1 {
				c.config.logger.Info(fmt.Sprintf("Connected to broker address [%s] (%d of %d).", redact.Address(addresses[i]), i+1, n),
					"address", redact.Address(addresses[i]), "position", i+1, "addresses", n)
			}
			return conn, i, nil
		}
		err = redact.Error(err, addresses...)
		if n == 1 {
			return nil, i, err
		}
		if ctx.Err() != nil || messaging.IsPermanent(err) { // another node of the cluster would only repeat it
			return nil, i, err
		}
		failures = append(failures, err)
		if k < n-1 {
			c.config.logger.Warn(fmt.Sprintf("Broker address [%s] (%d of %d) did not answer [%v]; trying the next.", redact.Address(addresses[i]), i+1, n, err),
				"address", redact.Address(addresses[i]), "position", i+1, "addresses", n, "error", err.Error())
		}
	}
	return nil, start, fmt.Errorf("none of the %d broker addresses answered; is the cluster running and reachable? %w", n, errors.Join(failures...))
}

func (c *connector) dialUnmasked(ctx context.Context, rawAddress string) (adapter.Connection, error) {
	address := redact.Address(rawAddress)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to %s abandoned before dialling: %w", address, err)
	}

	properties := amqp.NewConnectionProperties()
	if c.config.connectionName != "" {
		properties.SetClientConnectionName(c.config.connectionName)
	}
	config := amqp.Config{
		Heartbeat:  c.config.heartbeat,
		Properties: properties,
		Locale:     "en_US",
	}
	if c.config.tls != nil {
		config.TLSClientConfig = c.config.tls.Clone()
	}

	dialCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	expiry := newBound(c.config.brokerTimeout, cancel)
	conn, err := c.config.dialer.Dial(dialCtx, rawAddress, config)
	timedOut := expiry.Stop()
	if err == nil && (timedOut || ctx.Err() != nil) {
		// The handshake finished as the bound passed; do not keep a connection the
		// caller was told failed.
		_ = conn.Sever()
		err = context.Cause(dialCtx)
	}
	if err == nil {
		return conn, nil
	}
	switch {
	case timedOut:
		return nil, fmt.Errorf("connect to %s did not complete within [%s] (%v); is the broker running and reachable? %w", address, c.config.brokerTimeout, err, ErrConnectTimeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("connect to %s abandoned (%v): %w", address, err, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("connect to %s abandoned: %w", address, err)
	}
	if errors.Is(err, amqp.ErrVhost) {
		// The broker closed the socket at connection.open without a reply:
		// the virtual host is missing (or the user may not use it).
		refused := &messaging.BrokerError{Code: messaging.ReplyNotFound, Text: "the virtual host was refused at connection.open", Op: "open the virtual host", Err: err}
		return nil, fmt.Errorf("the broker at %s refused access to the virtual host; check that the vhost in the address exists and that the user may use it: %w", address, refused)
	}
	refused := refusal("connect", err, false)
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) {
		switch amqpErr.Code {
		case amqp.AccessRefused:
			return nil, fmt.Errorf("the broker at %s refused the credentials (403 ACCESS_REFUSED: %s); check the user name and password in the address: %w", address, amqpErr.Reason, refused)
		case amqp.NotAllowed:
			return nil, fmt.Errorf("the broker at %s refused access to the virtual host (530 NOT_ALLOWED: %s); check the vhost in the address and the user's permissions: %w", address, amqpErr.Reason, refused)
		}
	}
	return nil, fmt.Errorf("connect to %s failed: %w; is the broker running (`make services` starts it locally)?", address, err)
}

// badAddress marks a malformed address messaging.ErrBadAddress without
// adding words to the message: its text is empty.
var badAddress = silent{messaging.ErrBadAddress}

// silent is an error that matches its target with errors.Is and prints
// nothing, so a message that already says it all can carry a sentinel.
type silent struct{ target error }

func (s silent) Error() string { return "" }
func (s silent) Unwrap() error { return s.target }

// malformedAddress explains an address amqp091 cannot parse. The parser's own
// words quote the address, or a piece of it cut at a character the password
// holds (a '#' starts a fragment, so "invalid port" quotes what follows a
// ':'), so when the address carries a password they are withheld rather than
// trusted to the masking.
func malformedAddress(address string, cause error) error {
	masked := redact.Address(address)
	const advice = "give rabbitmq.Options.Address a URI such as amqp://user:password@host:5672/vhost"
	if redact.Password(address) != "" {
		return fmt.Errorf("the broker address %s is malformed (the parser's detail is withheld because it may quote the password); "+
			"a password holding a reserved character must be percent-encoded ('#' as %%23, '@' as %%40, ':' as %%3A, '/' as %%2F, '?' as %%3F, '%%' as %%25); %s%w", masked, advice, badAddress)
	}
	return fmt.Errorf("the broker address %s is malformed (%s); %s%w", masked, redact.Text(cause.Error(), address), advice, badAddress)
}
