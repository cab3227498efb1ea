package serialization

import (
	"fmt"
	"reflect"

	"github.com/segmentio/encoding/json"
)

// JSONContentType is the content type of the default serializer.
const JSONContentType = "application/json"

// JSON is the default Serializer and Deserializer. It is registered for
// "application/json" and for the empty content type, so payloads written
// without a content type still decode.
//
// It reads and writes exactly what encoding/json does (the same struct tags,
// json.Number, json.RawMessage, Marshaler and Unmarshaler methods, errors for
// the same inputs), through github.com/segmentio/encoding/json: that decodes
// in one pass where encoding/json first scans the whole payload to validate
// it, which was most of a consumer's own CPU per message. A differential fuzz
// test holds the two to the same results; to decode with encoding/json
// itself, register your own Deserializer with Options.AddDeserializer.
type JSON struct{}

// ContentType returns "application/json".
func (JSON) ContentType() string { return JSONContentType }

// Serialize encodes message as JSON.
func (JSON) Serialize(message any) ([]byte, error) {
	payload, err := json.Marshal(message)
	if err != nil {
		return nil, fmt.Errorf("this message cannot be written as JSON: %w", err)
	}
	return payload, nil
}

// Deserialize decodes JSON payload into target, a pointer.
func (JSON) Deserialize(payload []byte, target any) error {
	if err := json.Unmarshal(payload, target); err != nil {
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
