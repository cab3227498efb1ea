// Package protobuf is a serialization codec for Protocol Buffers messages,
// for services whose messages are already generated from .proto files. It is
// beyond the AceMQ family's contract (no other library of the family reads
// it): use it between services of this module, or with any consumer that
// reads application/x-protobuf.
//
// Messages are the generated types (proto.Message), registered per message
// type as JSON types are, by their pointer type:
//
//	connector := serialization.New(transport,
//		serialization.Options.Serializer(protobuf.Codec{}),
//		serialization.Options.AddDeserializer(protobuf.Codec{}), // under application/x-protobuf
//		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeFor[*ordersv1.OrderPlaced](): "order.placed"}),
//		serialization.Options.ReadTypes(map[string]reflect.Type{"order.placed": reflect.TypeFor[*ordersv1.OrderPlaced]()}),
//	)
//
// A handler then receives a *ordersv1.OrderPlaced. The wire format carries
// no type name, so, as with JSON, the message type header says what a
// payload is.
package protobuf

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// ContentType is the content type the codec writes and reads.
const ContentType = "application/x-protobuf"

// Codec is a serialization.Serializer and Deserializer of proto.Message
// values with google.golang.org/protobuf. Its zero value is ready to use, and
// it is safe for concurrent use.
type Codec struct{}

var (
	messageType   = reflect.TypeFor[proto.Message]()
	deterministic = proto.MarshalOptions{Deterministic: true}
)

// ContentType returns application/x-protobuf.
func (Codec) ContentType() string { return ContentType }

// Serialize encodes message, which must be a proto.Message (a generated
// type's pointer), in the protobuf binary format. Map fields are written in
// key order, so one message always gives the same bytes (a payload hash or a
// deduplication by content holds).
func (Codec) Serialize(message any) ([]byte, error) {
	m, ok := message.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("protobuf: %T is not a proto.Message; write the generated type's pointer (&pb.OrderPlaced{...}) and register that pointer type in WriteTypes", message)
	}
	payload, err := deterministic.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protobuf: this %T cannot be written: %w", message, err)
	}
	return payload, nil
}

// Deserialize decodes payload into target: a pointer to a nil message
// pointer (what serialization passes for a registered *pb.T, which it then
// fills with a new message), or a message itself.
func (Codec) Deserialize(payload []byte, target any) error {
	m, err := messageOf(target)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("protobuf: this message is not protobuf that reads as %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// messageOf returns the message to decode into: target itself, or a new
// message it now points to.
func messageOf(target any) (proto.Message, error) {
	value := reflect.ValueOf(target)
	if !value.IsValid() || value.Kind() != reflect.Pointer || value.IsNil() {
		return nil, fmt.Errorf("protobuf: cannot decode into %T; register a generated message's pointer type (*pb.OrderPlaced) in ReadTypes", target)
	}
	m, ok := target.(proto.Message)
	if !ok {
		slot := value.Elem()
		if slot.Kind() != reflect.Pointer || !slot.Type().Implements(messageType) {
			return nil, fmt.Errorf("protobuf: cannot decode into %s, which is not a generated message; register a generated message's pointer type (*pb.OrderPlaced) in ReadTypes", slot.Type())
		}
		fresh := reflect.New(slot.Type().Elem())
		slot.Set(fresh)
		m = fresh.Interface().(proto.Message)
	}
	if m.ProtoReflect().Descriptor() == nil {
		// A dynamic message's zero value has no type to decode into.
		return nil, fmt.Errorf("protobuf: cannot decode into %T, which has no message descriptor; register a generated message's pointer type (*pb.OrderPlaced) in ReadTypes", target)
	}
	return m, nil
}
