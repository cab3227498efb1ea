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
	"github.com/warrenmq/messaging/internal/redial"
)

// ErrNoConnector reports a Checker built without Options.Connector.
var ErrNoConnector = errors.New("status: no connector; pass status.Options.Connector(transport)")

// Checker probes the broker. It is safe for concurrent use; probes are
// serialised on one connection.
type Checker struct {
	config config

	probe chan struct{} // one slot: the probe in flight
	link  *redial.Link  // the probe's connection; nil without a connector

	mu           sync.Mutex // guards the fields below
	failingSince time.Time
	stillRunning map[int]bool // Report's checks whose goroutine has not returned
}

// New returns a Checker. It does not connect until the first Status call.
func New(options ...Option) *Checker {
	c := &Checker{config: newConfig(options), probe: make(chan struct{}, 1)}
	if c.config.connector != nil {
		c.link = redial.New(c.config.connector, "status")
	}
	return c
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
	c.link.Sever()
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

// publish sends one probe on the kept connection. A failed probe redials next
// time, except one the broker refused because it blocked the connection
// (a memory or disk alarm): a new connection would be blocked again at its
// first probe, and a dial per probe only adds load to a broker short of
// memory, so the probes fail as paused on this connection until it is
// unblocked.
func (c *Checker) publish(ctx context.Context) error {
	writer, connection, err := c.link.Writer(ctx)
	if err != nil {
		c.link.Discard(connection)
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
		if !errors.Is(err, messaging.ErrPublishingPaused) {
			c.link.Discard(connection) // unless a later probe replaced it
		}
		return fmt.Errorf("status: probe to exchange %q: %w", c.config.topic, err)
	}
	return nil
}

func (c *Checker) judge(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.failingSince = time.Time{}
		return nil
	}
	if messaging.IsPermanent(err) {
		return err
	}
	now := time.Now()
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

// Close releases the probe's connection; later probes fail with
// messaging.ErrClosed.
func (c *Checker) Close() error {
	if c.link == nil {
		return nil
	}
	return c.link.Close()
}
