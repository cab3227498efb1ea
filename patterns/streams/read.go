package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/streaming"
)

// ErrUnsupported is what Read returns on a transport that does not consume
// stream queues (the in-memory one), before it declares or consumes
// anything. Falling back to an ordinary queue would quietly lose replay,
// retention and every consumer's own position.
var ErrUnsupported = errors.New("acemq: this transport does not support streams; they are a RabbitMQ queue type and the in-memory transport has no equivalent")

// supporter is the capability question a transport answers: its Connector
// or its Connection (rabbitmq true, memory false).
type supporter interface {
	SupportsStreams() bool
}

// Supported asks the transport whether it consumes stream queues: the
// Connector when it answers, else a connection it opens and closes for the
// question (following decorators' Unwrap). A transport that answers neither
// way is taken at its word when it consumes.
func Supported(ctx context.Context, connector messaging.Connector) (bool, error) {
	if s, ok := connector.(supporter); ok {
		return s.SupportsStreams(), nil
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		return false, fmt.Errorf("streams: connect to ask whether the transport supports streams: %w", err)
	}
	defer conn.Close()
	if s, ok := messaging.As[supporter](conn); ok {
		return s.SupportsStreams(), nil
	}
	return true, nil
}

// Reader is a running stream reader: Read started it, Close stops it.
type Reader struct {
	consumer *streaming.Consumer
	once     sync.Once
}

// Close stops reading, lets the handler finish the batch in hand (the
// runtime's drain, bounded) and waits for the reader to stop. What was
// handed over and not settled is read again by the next run from its stated
// offset. It is safe to call more than once.
func (r *Reader) Close() error {
	var err error
	r.once.Do(func() {
		err = r.consumer.Close()
	})
	return err
}

// Consumer is the runtime underneath, for its Health and Waiting.
func (r *Reader) Consumer() *streaming.Consumer { return r.consumer }

// Read consumes the stream name with handler, in the background, until Close.
// It asks the transport first and returns ErrUnsupported on one without
// streams (memory) before it declares or consumes anything. It declares the
// settlement queues {stream}.dlq and {stream}.parked beside the stream, never
// the stream itself (Declare it), and starts a consumer at the stated offset
// (Options.From, FromNext when none is stated: the x-stream-offset argument is
// always sent) with the prefetch (DefaultPrefetch when none) and Options.Name
// as the exact consumer tag (acemq-{stream} when none, as the other AceMQ
// libraries tag their consumers). It returns once the consumer started, or the
// first error starting it (the stream missing matches messaging.ErrNotFound;
// the settlement queues are declared by then). ctx bounds the start only; the
// reader runs until Close.
//
// Settlement on a stream: returning normally or messaging.Accept acknowledges,
// which advances this consumer and copies nothing; messaging.Reject and Park
// copy the message to {stream}.dlq or {stream}.parked (the original stays in
// the stream); messaging.Retry and InProgress are refused: the message is
// parked with a *RetryOnStreamError. The library never appends to the stream.
//
// When the connection drops, the reader is reattached at the oldest offset
// it was handed and had not settled, or one past the newest it settled, not
// at the stated offset again; at most the prefetch is handed over twice per
// drop. A new Read (a restart) starts at the stated offset: carry a
// checkpoint across restarts yourself (OffsetOf, FromOffset(saved + 1)).
func Read(ctx context.Context, connector messaging.Connector, stream string, handler messaging.Handler, options ...Option) (*Reader, error) {
	if stream == "" {
		return nil, errors.New("streams: read a stream with no name; name it")
	}
	if handler == nil {
		return nil, fmt.Errorf("streams: read stream %q with a nil handler; give one", stream)
	}
	supported, err := Supported(ctx, connector)
	if err != nil {
		return nil, err
	}
	if !supported {
		return nil, ErrUnsupported
	}
	cfg := newConfig(options)
	if cfg.offset.kind == offsetExact {
		if err := checkReachable(ctx, connector, stream, uint64(cfg.offset.exact)); err != nil {
			return nil, err
		}
	}
	tag := cfg.name
	if tag == "" {
		tag = DefaultTagPrefix + stream
	}
	resuming := &resumingConnector{Connector: connector, stream: stream, tag: tag, position: newPosition(cfg.offset), monitor: cfg.monitor, logger: cfg.logger}
	subscription := streaming.NewSubscription(stream,
		streaming.SubscriptionOptions.Name(tag),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(true),
		streaming.SubscriptionOptions.BufferCapacity(uint16(cfg.prefetch)),
		streaming.SubscriptionOptions.BatchCapacity(uint16(cfg.batch)),
		streaming.SubscriptionOptions.FullDeliveryToHandler(cfg.fullDelivery),
		streaming.SubscriptionOptions.RefuseRetry(refusal),
		streaming.SubscriptionOptions.ReconnectDelay(cfg.reconnectDelay),
		streaming.SubscriptionOptions.AddWorkers(RefuseRetry(cfg.monitor)(handler)),
	)
	consumer := streaming.New(resuming,
		streaming.Options.Subscriptions(subscription),
		streaming.Options.Logger(cfg.logger),
	)
	r := &Reader{consumer: consumer}
	if err := consumer.Start(ctx); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("streams: read stream %q: %w", stream, err)
	}
	return r, nil
}
