package serialization

import (
	"context"
	"fmt"
	"reflect"

	"github.com/warrenmq/messaging"
)

type writer struct {
	messaging.Writer
	config *config
}

// Unwrap returns the decorated writer, so messaging.As finds its capabilities.
func (w writer) Unwrap() messaging.Writer { return w.Writer }

// Write encodes every dispatch, then writes them all; see encode.
func (w writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	encoded, err := w.config.encodeAll(dispatches)
	if err != nil {
		return 0, err
	}
	return w.Writer.Write(ctx, encoded...)
}

type commitWriter struct {
	messaging.CommitWriter
	config *config
}

// Unwrap returns the decorated commit writer, so messaging.As finds its
// capabilities.
func (w commitWriter) Unwrap() messaging.CommitWriter { return w.CommitWriter }

// Write encodes every dispatch, then writes them all, as writer.Write does.
func (w commitWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	return writer{Writer: w.CommitWriter, config: w.config}.Write(ctx, dispatches...)
}

// encodeAll returns encoded copies of dispatches, leaving the caller's slice
// untouched. When any one fails, it returns the error and nothing is written.
func (c *config) encodeAll(dispatches []messaging.Dispatch) ([]messaging.Dispatch, error) {
	encoded := make([]messaging.Dispatch, len(dispatches))
	for i, dispatch := range dispatches {
		if dispatch.Message == nil {
			encoded[i] = dispatch // a pre-encoded Payload passes unchanged
			continue
		}
		err := c.encode(&dispatch)
		c.monitor.MessageEncoded(err)
		if err != nil {
			return nil, fmt.Errorf("%w (dispatch %d of %d; none of them was written)", err, i+1, len(dispatches))
		}
		encoded[i] = dispatch
	}
	return encoded, nil
}

// encode fills Payload, ContentType and MessageType from Message, and Topic from
// the type name when it is empty (unless Options.TopicFromType(false)).
func (c *config) encode(dispatch *messaging.Dispatch) error {
	name, ok := c.writeTypeName(dispatch.Message)
	if !ok {
		return fmt.Errorf("%w: %T; add it to serialization.Options.WriteTypes", ErrUnknownWriteType, dispatch.Message)
	}
	payload, err := c.serialize(dispatch.Message)
	if err != nil {
		return fmt.Errorf("%w: %s (%T) with %q: %w", ErrSerialization, name, dispatch.Message, c.serializer.ContentType(), err)
	}
	dispatch.Payload = payload
	dispatch.ContentType = c.serializer.ContentType()
	dispatch.MessageType = name
	if dispatch.Topic == "" && !c.keepAddress {
		dispatch.Topic = name
	}
	return nil
}

// writeTypeName finds message's wire name, accepting a value of a registered
// pointer type and a pointer to a registered value type.
func (c *config) writeTypeName(message any) (string, bool) {
	t := reflect.TypeOf(message)
	if name, ok := c.writeTypes[t]; ok {
		return name, true
	}
	if t.Kind() == reflect.Pointer {
		if name, ok := c.writeTypes[t.Elem()]; ok {
			return name, true
		}
	}
	if name, ok := c.writeTypes[reflect.PointerTo(t)]; ok {
		return name, true
	}
	return "", false
}

// serialize runs the serializer, turning a panic into an error.
func (c *config) serialize(message any) (payload []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the serializer panicked: %v", r)
		}
	}()
	return c.serializer.Serialize(message)
}
