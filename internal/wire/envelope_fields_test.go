package wire

import (
	"reflect"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// filledEnvelope sets every field of an Envelope to a value that is not its
// default, by reflection, so that a field added to the Envelope is covered
// without this test knowing its name.
func filledEnvelope(t *testing.T) messaging.Envelope {
	t.Helper()
	var e messaging.Envelope
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		field, name := v.Field(i), v.Type().Field(i).Name
		switch field.Interface().(type) {
		case string:
			field.SetString(name + "-value")
		case int:
			field.SetInt(int64(2 + i))
		case time.Duration:
			field.SetInt(int64(time.Duration(i+1) * time.Second))
		case time.Time:
			field.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(i), 0).UTC()))
		case []string:
			field.Set(reflect.ValueOf([]string{name + "-1", name + "-2"}))
		default:
			t.Fatalf("Envelope.%s is a %s: teach filledEnvelope a value for it, and the wire encoding to carry it", name, field.Type())
		}
	}
	return e
}

// Every envelope field travels: Encode writes it and DecodeEnvelope reads it
// back as it was.
func TestEveryEnvelopeFieldSurvivesEncodeAndDecode(t *testing.T) {
	sent := filledEnvelope(t)
	var d messaging.Dispatch
	d.SetEnvelope(sent)
	d.RoutingKey = "orders"

	headers, props := Encode(d, time.Unix(1, 0), "default@origin")
	got := DecodeEnvelope(headers, props, d.RoutingKey)

	if !reflect.DeepEqual(got, sent) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, sent)
	}
}

// Header values take the form amqp091 writes without changing them: nested
// maps become tables, and an int too large for an AMQP int32 (which amqp091
// would cut to its low 32 bits) an int64. What a consumer receives has ints
// as int32, times in whole seconds and copies of every container.
func TestHeaderValuesTakeTheFormAnAMQPTableCarries(t *testing.T) {
	raw := []byte("raw")
	stamp := time.Unix(1_700_000_000, 999_000_000)
	sent := map[string]any{
		"small": 7, "large": 1 << 40, "text": "a", "bytes": raw, "time": stamp,
		"nested": map[string]any{"n": 1 << 33, "list": []any{map[string]any{"k": "v"}}},
	}

	written := TableValue(sent).(amqp.Table)
	received := ReceivedHeaders(sent)

	if written["small"] != 7 || written["large"] != int64(1<<40) || !written["time"].(time.Time).Equal(stamp) {
		t.Fatalf("written %#v", written)
	}
	nested := written["nested"].(amqp.Table)
	if nested["n"] != int64(1<<33) || !reflect.DeepEqual(nested["list"], []any{amqp.Table{"k": "v"}}) {
		t.Fatalf("written nested %#v", nested)
	}
	want := map[string]any{
		"small": int32(7), "large": int64(1 << 40), "text": "a", "bytes": []byte("raw"), "time": time.Unix(1_700_000_000, 0),
		"nested": amqp.Table{"n": int64(1 << 33), "list": []any{amqp.Table{"k": "v"}}},
	}
	if !reflect.DeepEqual(received, want) {
		t.Fatalf("received\n%#v\nwant\n%#v", received, want)
	}
	raw[0] = 'X'
	if string(received["bytes"].([]byte)) != "raw" {
		t.Fatalf("received bytes share the sender's array")
	}
	if ReceivedHeaders(nil) != nil || ReceivedHeaders(map[string]any{}) != nil {
		t.Fatalf("no headers must be received as nil")
	}
}
