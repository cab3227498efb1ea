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

// connection is one AMQP connection. It watches the broker's close and
// blocked notifications and severs the socket when a wait on the broker passes the
// broker timeout.
type connection struct {
	config *config
	raw    adapter.Connection
	// forget tells the connector the connection ended; lost is true when the
	// broker or the network ended it, not the application.
	forget  func(c *connection, lost bool)
	watched chan struct{} // closed once the watcher has seen the connection close

	mu            sync.Mutex
	closing       bool
	ended         bool
	endReason     string
	blocked       bool
	blockedReason string
	paused        chan struct{} // closed while the broker blocks the connection
}

func newConnection(cfg *config, raw adapter.Connection, forget func(*connection, bool)) *connection {
	c := &connection{
		config:  cfg,
		raw:     raw,
		forget:  forget,
		watched: make(chan struct{}),
		paused:  make(chan struct{}),
	}
	closes := raw.NotifyClose(make(chan *amqp.Error, 1))
	blocks := raw.NotifyBlocked(make(chan amqp.Blocking, 8))
	go c.watch(closes, blocks)
	return c
}

// watch follows the connection until it closes, whoever closes it.
func (c *connection) watch(closes <-chan *amqp.Error, blocks <-chan amqp.Blocking) {
	defer close(c.watched)
	for {
		select {
		case b, ok := <-blocks:
			if !ok {
				blocks = nil
				continue
			}
			c.setBlocked(b)
		case err := <-closes:
			reason := "closed by the application"
			if err != nil {
				reason = redact.Text(err.Error(), c.config.addresses...)
			}
			c.mu.Lock()
			c.ended = true
			c.endReason = reason
			c.mu.Unlock()
			if err != nil {
				c.config.logger.Info(fmt.Sprintf("AMQP connection closed (reason: %s)", reason), "reason", reason)
			} else { // our own Close: routine, not worth a line at INFO
				c.config.logger.Debug(fmt.Sprintf("AMQP connection closed (reason: %s)", reason), "reason", reason)
			}
			c.config.monitor.ConnectionClosed()
			c.forget(c, err != nil)
			return
		}
	}
}

func (c *connection) setBlocked(b amqp.Blocking) {
	c.mu.Lock()
	if b.Active == c.blocked {
		c.mu.Unlock()
		return
	}
	c.blocked = b.Active
	if b.Active {
		c.blockedReason = b.Reason
		close(c.paused)
	} else {
		c.blockedReason = ""
		c.paused = make(chan struct{})
	}
	c.mu.Unlock()

	if b.Active {
		c.config.logger.Warn(fmt.Sprintf("AMQP connection blocked by broker (reason: %s)", b.Reason), "reason", b.Reason)
		c.config.monitor.ConnectionBlocked(b.Reason)
		return
	}
	c.config.logger.Info("AMQP connection unblocked by broker")
	c.config.monitor.ConnectionUnblocked()
}

// usable returns why nothing can be sent on the connection, or nil.
func (c *connection) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended:
		return fmt.Errorf("the AMQP connection is closed (%s); connect again: %w", c.endReason, messaging.ErrClosed)
	case c.closing:
		return fmt.Errorf("the AMQP connection is closing; connect again: %w", messaging.ErrClosed)
	}
	return nil
}

// pausedError returns the blocked error while the broker blocks the connection.
func (c *connection) pausedError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.blocked {
		return nil
	}
	return c.pausedErrorLocked()
}

func (c *connection) pausedErrorLocked() error {
	return fmt.Errorf("the broker has blocked this connection (reason: %s), so publishing is paused until its alarm clears: %w", c.blockedReason, messaging.ErrPublishingPaused)
}

// pausedSignal returns a channel that is closed while the connection is blocked.
func (c *connection) pausedSignal() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// call runs f, a blocking call on the broker, bounded by the broker timeout: when
// the bound passes the connection is severed, which makes f return, and the error
// wraps sentinel. Any other error is what failure makes of it.
func (c *connection) call(op string, sentinel error, f func() error) error {
	b := newBound(c.config.brokerTimeout, func() { c.sever(op) })
	err := f()
	if b.Stop() {
		return c.timeoutError(op, sentinel)
	}
	return c.failure(op, err)
}

// failure says what the error of a broker call for op means. A refusal the
// broker sent comes back as a *messaging.BrokerError (one of 320 or 541, the
// broker closing the connection, matches messaging.ErrClosed). A call that
// failed because its channel or connection closed under it, which amqp091
// reports as "channel/connection is not open", as a socket error, or
// otherwise once the connection has ended, comes back matching
// messaging.ErrClosed: from the first such failure on, not only once the
// close notification has been seen, so that every caller treats it as a lost
// connection and never as a verdict on its messages.
func (c *connection) failure(op string, err error) error {
	if err == nil {
		return nil
	}
	err = refusal(op, err, true)
	var refused *messaging.BrokerError
	if errors.Is(err, messaging.ErrClosed) || errors.As(err, &refused) {
		return err
	}
	if !errors.Is(err, amqp.ErrClosed) && !messaging.IsConnectionLost(err) && c.usable() == nil {
		return err
	}
	reason := "the channel or connection closed under it"
	if ended := c.endedReason(); ended != "" {
		reason = "the connection closed: " + ended
	}
	return fmt.Errorf("AMQP %s failed because %s (%w); connect again: %w", op, reason, err, messaging.ErrClosed)
}

// endedReason is why the connection ended, once the watcher has seen it end.
func (c *connection) endedReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		return ""
	}
	return c.endReason
}

func (c *connection) sever(op string) {
	timeout := c.config.brokerTimeout
	c.config.logger.Warn(fmt.Sprintf("AMQP %s did not complete within [%s]; severing the connection.", op, timeout), "timeout", timeout)
	_ = c.raw.Sever()
}

func (c *connection) timeoutError(op string, sentinel error) error {
	return fmt.Errorf("AMQP %s did not complete within [%s], so the connection was severed; connect again: %w", op, c.config.brokerTimeout, sentinel)
}

// openChannel opens a channel within the broker timeout.
func (c *connection) openChannel(ctx context.Context) (adapter.Channel, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open an AMQP channel: %w", err)
	}
	var ch adapter.Channel
	err := c.call("channel open", ErrConnectTimeout, func() (err error) {
		ch, err = c.raw.Channel()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open an AMQP channel: %w", err)
	}
	return ch, nil
}

// closeChannel closes ch within the broker timeout. A channel the broker already
// closed is not an error.
//
// On a blocked connection the broker does not read the socket, so a close
// handshake cannot complete before the broker timeout: the connection is
// severed at once instead (channels cannot outlive a severed connection, and
// anything unconfirmed on it was already reported as arrival unknown).
func (c *connection) closeChannel(ch adapter.Channel) error {
	if c.pausedError() != nil {
		_ = c.raw.Sever()
		return nil
	}
	err := c.call("channel close", ErrCloseTimeout, ch.Close)
	if errors.Is(err, messaging.ErrClosed) { // closed already: nothing left to close
		return nil
	}
	return err
}

// Close closes the connection and every channel on it, within the broker timeout.
func (c *connection) Close() error {
	if !markClosed(&c.mu, &c.closing) {
		return nil
	}

	var err error
	if c.pausedError() != nil {
		_ = c.raw.Sever() // a blocked socket is not read: the handshake would only wait out the bound
	} else {
		err = c.call("connection close", ErrCloseTimeout, c.raw.Close)
	}
	if errors.Is(err, messaging.ErrClosed) { // closed already, by the broker or the network
		err = nil
	}
	wait := newBound(c.config.brokerTimeout, nil)
	defer wait.Stop()
	select {
	case <-c.watched:
	case <-wait.Done():
		c.sever("connection close")
		if err == nil {
			err = c.timeoutError("connection close", ErrCloseTimeout)
		}
	}
	c.forget(c, false)
	return err
}
