package serialization

import (
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/segmentio/encoding/json"
)

// JSONContentType is the content type of the default serializer.
const JSONContentType = "application/json"

// JSON is the default Serializer and Deserializer. It is registered for
// "application/json" and for the empty content type, so payloads written
// without a content type still decode.
//
// It reads and writes exactly what encoding/json does (the same struct tags,
// json.Number, json.RawMessage, Marshaler and Unmarshaler methods, and
// encoding/json's own errors), through github.com/segmentio/encoding/json,
// which decodes in one pass where encoding/json first scans the whole payload
// to validate it: that scan was most of a consumer's own CPU per message. A
// differential fuzz test holds the two to the same results; to decode with
// encoding/json alone, register your own Deserializer with
// Options.AddDeserializer.
type JSON struct{}

// ContentType returns "application/json".
func (JSON) ContentType() string { return JSONContentType }

// Serialize encodes message as JSON. A message the one-pass encoder refuses
// is encoded again by encoding/json, so that the error is encoding/json's.
func (JSON) Serialize(message any) ([]byte, error) {
	if payload, err := json.Marshal(message); err == nil {
		return payload, nil
	}
	payload, err := stdjson.Marshal(message)
	if err != nil {
		return nil, fmt.Errorf("this message cannot be written as JSON: %w", err)
	}
	return payload, nil
}

// SerializeFramed returns frame followed by message written as Serialize
// writes it, in one new slice: a codec that puts a few bytes of its own
// before the JSON (the claim check's inline frame) so writes it without
// copying the payload a second time.
func (JSON) SerializeFramed(frame string, message any) ([]byte, error) {
	buffer := framingBuffers.Get().(*[]byte)
	defer framingBuffers.Put(buffer)
	encoded, err := json.Append((*buffer)[:0], message, json.EscapeHTML|json.SortMapKeys) // Marshal's flags
	if err != nil {
		if encoded, err = (JSON{}).Serialize(message); err != nil {
			return nil, err
		}
	} else if cap(encoded) <= maxPooledBuffer {
		*buffer = encoded
	}
	framed := make([]byte, len(frame)+len(encoded))
	copy(framed, frame)
	copy(framed[len(frame):], encoded)
	return framed, nil
}

// framingBuffers hold SerializeFramed's encodings until they are copied out;
// one that grew past maxPooledBuffer is not kept.
var framingBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 64 << 10

// Deserialize decodes JSON payload into target, a pointer. A payload the
// one-pass decoder refuses is decoded again by encoding/json, into a zeroed
// target, so that what it returns is encoding/json's verdict and error (a
// *json.SyntaxError, a *json.UnmarshalTypeError, the same text): only a
// message that does not decode pays for the second pass.
func (JSON) Deserialize(payload []byte, target any) error {
	if json.Unmarshal(payload, target) == nil {
		return nil
	}
	if v := reflect.ValueOf(target); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
	if err := stdjson.Unmarshal(payload, target); err != nil {
		return fmt.Errorf("this message is not JSON that reads as %s: %w", targetName(target), err)
	}
	return nil
}

// targetName names the type a pointer target points to.
func targetName(target any) string {
	t := reflect.TypeOf(target)
	if t == nil {
		return "nil"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.String()
}
