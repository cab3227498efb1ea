package serialization

import "errors"

// Serializer encodes an outgoing message into a payload of its content type.
type Serializer interface {
	// ContentType names the encoding, e.g. "application/json"; it is written to
	// Dispatch.ContentType.
	ContentType() string
	// Serialize encodes message.
	Serialize(message any) ([]byte, error)
}

// Deserializer decodes a payload into target, a non-nil pointer to a new value
// of the registered type. It must not panic on any input; the decorator recovers
// a panic and reports it as a deserialization error, but that is a bug.
type Deserializer interface {
	Deserialize(payload []byte, target any) error
}

// Monitor receives one callback per message encoded on write and per delivery
// decoded on read. A Monitor that is also a ContentTypeMonitor hears decodes
// with their content type instead.
type Monitor interface {
	// MessageEncoded reports encoding one dispatch's Message; err is nil on
	// success.
	MessageEncoded(err error)
	// MessageDecoded reports decoding one delivery; err is nil on success,
	// otherwise it wraps ErrUnknownMessageType, ErrUnknownContentType or
	// ErrDeserialization. Deliveries filtered by AllowedTypes are not reported.
	MessageDecoded(err error)
}

// NopMonitor is a Monitor that does nothing.
type NopMonitor struct{}

// MessageEncoded does nothing.
func (NopMonitor) MessageEncoded(error) {}

// MessageDecoded does nothing.
func (NopMonitor) MessageDecoded(error) {}

// Sentinel errors; test with errors.Is.
var (
	// ErrUnknownMessageType marks a delivery whose MessageType is not in ReadTypes.
	ErrUnknownMessageType = errors.New("serialization: the message type is not registered in ReadTypes")
	// ErrUnknownContentType marks a delivery whose ContentType has no deserializer.
	ErrUnknownContentType = errors.New("serialization: no deserializer is registered for the content type")
	// ErrDeserialization marks a delivery whose payload does not decode into its
	// registered type.
	ErrDeserialization = errors.New("serialization: the payload does not decode into the registered type")
	// ErrUnknownWriteType marks a dispatch whose Message's Go type is not in
	// WriteTypes; nothing of the write was written.
	ErrUnknownWriteType = errors.New("serialization: the message's Go type is not registered in WriteTypes")
	// ErrSerialization marks a dispatch whose Message the serializer could not
	// encode; nothing of the write was written.
	ErrSerialization = errors.New("serialization: the message could not be encoded")
)

// decodeError is the Delivery.Undecodable value: its text says what went wrong
// and what to do, and errors.Is sees both its sentinel and its cause.
type decodeError struct {
	kind  error
	text  string
	cause error
}

func (e *decodeError) Error() string { return e.text }

func (e *decodeError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}
