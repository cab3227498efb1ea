// Package status is a health probe for /status endpoints. Each probe publishes
// one empty, confirmed message to a probe exchange, so it proves the broker
// accepts and persists work, not merely that a socket is open. Brief broker
// events (a failover, a rolling restart) are tolerated inside a window;
// credential, permission and missing-exchange faults are reported at once
// because they do not fix themselves.
//
// Report adds the service's other dependencies (Options.Check: a database
// ping, a consumer waiting on an outage) to the broker probe, each bounded, in
// a JSON-ready form; no error the package returns, logs or reports carries a
// password of an address given to Options.Redact.
package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// ErrNoConnector reports a Checker built without Options.Connector.
var ErrNoConnector = errors.New("status: no connector; pass status.Options.Connector(transport)")

// Checker probes the broker. It is safe for concurrent use; probes are
// serialised on one connection.
type Checker struct {
	config configuration

	probe chan struct{} // one slot: the probe in flight

	mu           sync.Mutex // guards the fields below
	connection   messaging.Connection
	writer       messaging.CommitWriter
	failingSince time.Time
	stillRunning map[int]bool // Report's checks whose goroutine has not returned
}

// New returns a Checker. It does not connect until the first Status call.
func New(options ...option) *Checker {
	return &Checker{config: newConfiguration(options), probe: make(chan struct{}, 1)}
}

// Status publishes one probe and waits for the broker's confirmation. It returns
// nil when the broker confirmed it, and nil for a failure while consecutive
// failures are younger than the tolerance window (logging a WARN). Always pass a
// context with a deadline: when it passes first, the connection is severed and
// Status waits at most the sever timeout for the probe to return.
func (c *Checker) Status(ctx context.Context) error {
	if c.config.connector == nil {
		return ErrNoConnector
	}
	err := c.run(ctx)
	return c.redact(c.judge(err))
}

// Probe publishes one probe and returns its result as it is, outside the
// tolerance window: for an operator's one-off check, not for /status.
func (c *Checker) Probe(ctx context.Context) error {
	if c.config.connector == nil {
		return ErrNoConnector
	}
	return c.redact(c.run(ctx))
}

func (c *Checker) run(ctx context.Context) error {
	select {
	case c.probe <- struct{}{}:
		defer func() { <-c.probe }()
	case <-ctx.Done():
		return fmt.Errorf("status: another probe is still running and this caller's context ended first: %w", ctx.Err())
	}

	done := make(chan error, 1)
	go func() { done <- c.publish(ctx) }()

	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	c.sever()
	timer := time.NewTimer(c.config.severTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		return fmt.Errorf("status: probe abandoned when the caller's context ended (%w): %w", ctx.Err(), err)
	case <-timer.C:
		return fmt.Errorf("status: probe did not return within %s after its context ended and the connection was severed: %w", c.config.severTimeout, ctx.Err())
	}
}

func (c *Checker) publish(ctx context.Context) error {
	writer, connection, err := c.ensureWriter(ctx)
	if err != nil {
		c.severIfCurrent(connection)
		return err
	}
	probe := messaging.Dispatch{
		Topic:       c.config.topic,
		RoutingKey:  c.config.routingKey,
		MessageType: "status-probe",
		Transient:   true,
	}
	if _, err = writer.Write(ctx, probe); err == nil {
		err = writer.Commit()
	}
	if err != nil {
		c.severIfCurrent(connection)
		return fmt.Errorf("status: probe to exchange %q: %w", c.config.topic, err)
	}
	return nil
}

func (c *Checker) ensureWriter(ctx context.Context) (messaging.CommitWriter, messaging.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writer != nil {
		return c.writer, c.connection, nil
	}
	if c.connection == nil {
		connection, err := c.config.connector.Connect(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("status: connect to the broker: %w", err)
		}
		c.connection = connection
	}
	writer, err := c.connection.CommitWriter(ctx)
	if err != nil {
		return nil, c.connection, fmt.Errorf("status: open a channel: %w", err)
	}
	c.writer = writer
	return writer, c.connection, nil
}

// severIfCurrent closes connection, the one a probe used, unless a later probe
// has already replaced it: a probe abandoned after its context ended must not
// cut the connection of the probe that followed it.
func (c *Checker) severIfCurrent(connection messaging.Connection) {
	if connection == nil {
		return
	}
	c.mu.Lock()
	current := c.connection == connection
	if current {
		c.connection, c.writer = nil, nil
	}
	c.mu.Unlock()
	if current {
		_ = connection.Close()
	}
}

// sever closes the probe's connection in the background (bounded by the
// transport's own close timeout), which makes a pending broker call return;
// the next probe redials. It is for a caller whose context has ended.
func (c *Checker) sever() {
	c.mu.Lock()
	connection := c.connection
	c.connection, c.writer = nil, nil
	c.mu.Unlock()
	if connection != nil {
		go func() { _ = connection.Close() }()
	}
}

func (c *Checker) judge(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.failingSince = time.Time{}
		return nil
	}
	if Permanent(err) {
		return err
	}
	now := c.config.now()
	if c.failingSince.IsZero() {
		c.failingSince = now
	}
	failingFor := now.Sub(c.failingSince)
	if failingFor < c.config.failureTolerance {
		c.config.logger.Warn("Broker status probe failed; tolerating it inside the failure window.",
			"error", c.redact(err).Error(), "failing_for", failingFor, "window", c.config.failureTolerance)
		return nil
	}
	return fmt.Errorf("status: probes have failed for %s (window %s): %w", failingFor.Round(time.Millisecond), c.config.failureTolerance, err)
}

// Close releases the probe's connection.
func (c *Checker) Close() error {
	c.mu.Lock()
	connection := c.connection
	c.connection, c.writer = nil, nil
	c.mu.Unlock()
	if connection != nil {
		return connection.Close()
	}
	return nil
}
