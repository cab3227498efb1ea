package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// NewDialer returns the Dialer over amqp091-go that the transport uses by default.
func NewDialer() Dialer { return amqpDialer{} }

type amqpDialer struct{}

// Dial dials with amqp091.DialConfig, keeping the raw net.Conn so the connection
// can be severed. The handshake is bounded by ctx: the socket carries ctx's deadline
// until the handshake completes, and is closed if ctx ends first.
func (amqpDialer) Dial(ctx context.Context, address string, config amqp.Config) (Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		raw net.Conn
	)
	config.Dial = func(network, addr string) (net.Conn, error) {
		dialer := net.Dialer{KeepAlive: 30 * time.Second}
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			if err := conn.SetDeadline(deadline); err != nil {
				_ = conn.Close()
				return nil, err
			}
		}
		mu.Lock()
		raw = conn
		mu.Unlock()
		return conn, nil
	}
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if raw != nil {
			_ = raw.Close()
		}
	})
	conn, err := amqp.DialConfig(address, config)
	interrupted := !stop()
	if err != nil {
		if interrupted {
			return nil, errors.Join(ctx.Err(), err)
		}
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			// The socket's deadline, which is ctx's, ended the handshake an
			// instant before ctx noticed.
			return nil, errors.Join(context.DeadlineExceeded, err)
		}
		return nil, err
	}
	if interrupted {
		_ = conn.Close()
		return nil, fmt.Errorf("handshake interrupted: %w", ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	return &amqpConnection{conn: conn, raw: raw}, nil
}

type amqpConnection struct {
	conn *amqp.Connection
	raw  net.Conn
}

func (c *amqpConnection) Channel() (Channel, error) {
	ch, err := c.conn.Channel()
	if err != nil {
		return nil, err
	}
	return amqpChannel{Channel: ch}, nil
}

func (c *amqpConnection) NotifyClose(receiver chan *amqp.Error) chan *amqp.Error {
	return c.conn.NotifyClose(receiver)
}

func (c *amqpConnection) NotifyBlocked(receiver chan amqp.Blocking) chan amqp.Blocking {
	return c.conn.NotifyBlocked(receiver)
}

func (c *amqpConnection) Close() error { return c.conn.Close() }

func (c *amqpConnection) Sever() error { return c.raw.Close() }

// amqpChannel is *amqp.Channel, whose method set already satisfies Channel.
type amqpChannel struct {
	*amqp.Channel
}
