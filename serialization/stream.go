package serialization

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/warrenmq/messaging"
)

type stream struct {
	messaging.Stream
	config *config
}

// Unwrap returns the decorated stream, so messaging.As finds its capabilities
// (a messaging.Requeuer, say): returning one delivery to its queue needs no
// decoding.
func (s stream) Unwrap() messaging.Stream { return s.Stream }

// Read reads the next delivery from the inner stream and decodes it. A delivery
// that cannot be decoded is still returned, with a nil Message and Undecodable
// set (or, with the matching Ignore* switch on, Undecodable nil). Read fails only
// when the inner Read fails.
func (s stream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	if err := s.Stream.Read(ctx, delivery); err != nil {
		return err
	}
	s.config.decode(ctx, delivery)
	return nil
}

// decode sets delivery.Message, or delivery.Undecodable, from its payload. An
// Undecodable already set by the inner stream is kept.
func (c *config) decode(ctx context.Context, delivery *messaging.Delivery) {
	delivery.Message = nil
	if delivery.Undecodable != nil {
		return
	}
	if c.allowed != nil {
		if _, ok := c.allowed[delivery.MessageType]; !ok {
			delivery.Undecodable = messaging.ErrFiltered
			return
		}
	}

	t, ok := c.readTypes[delivery.MessageType]
	if !ok {
		c.fail(ctx, delivery, c.ignoreUnknownMessageTypes, &decodeError{
			kind: ErrUnknownMessageType,
			text: fmt.Sprintf("could not be decoded: message type %q is not registered; add it to serialization.Options.ReadTypes, or turn on IgnoreUnknownMessageTypes to hand it to the handler as nil", delivery.MessageType),
		})
		return
	}

	deserializer, ok := c.deserializer(delivery.ContentType)
	if !ok {
		c.fail(ctx, delivery, c.ignoreUnknownContentTypes, &decodeError{
			kind: ErrUnknownContentType,
			text: fmt.Sprintf("could not be decoded: no deserializer for content type %q (message type %q); register one with serialization.Options.AddDeserializer", delivery.ContentType, delivery.MessageType),
		})
		return
	}

	value := reflect.New(t)
	if err := deserialize(deserializer, delivery.Payload, value.Interface()); err != nil {
		c.fail(ctx, delivery, c.ignoreDeserializationErrors, &decodeError{
			kind:  ErrDeserialization,
			text:  "could not be decoded: " + err.Error(),
			cause: err,
		})
		return
	}
	delivery.Message = value.Elem().Interface()
	c.decoded(delivery.ContentType, nil)
}

// fail reports err and either marks delivery undecodable or, when ignore is on,
// logs a WARN and leaves it to reach the handler with a nil Message.
func (c *config) fail(ctx context.Context, delivery *messaging.Delivery, ignore bool, err error) {
	c.decoded(delivery.ContentType, err)
	if !ignore {
		delivery.Undecodable = err
		return
	}
	c.logger.WarnContext(ctx, "Unable to decode a delivery; handing it to the handler with a nil Message.",
		slog.String("queue", delivery.SourceQueue),
		slog.String("message_id", delivery.MessageID),
		slog.String("message_type", delivery.MessageType),
		slog.String("content_type", delivery.ContentType),
		slog.Int("payload_bytes", len(delivery.Payload)),
		slog.Any("error", err),
	)
}

// deserialize runs deserializer, turning a panic into an error.
func deserialize(deserializer Deserializer, payload []byte, target any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the deserializer for %s panicked: %v", targetName(target), r)
		}
	}()
	return deserializer.Deserialize(payload, target)
}
