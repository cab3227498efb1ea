package sqlmq

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/wire"
)

// Headers are stored as JSON in which every value is tagged with its Go type,
// {"name": {"i32": "7"}}, so that a recovered row hands the transport the same
// types (and so the same AMQP field types and bytes) as the live path. Numbers
// travel as strings so that 64-bit integers and NaN survive. Only what an AMQP
// table can carry is accepted, at Write time: a row the transport could never
// encode would otherwise be durable and unpublishable. A nested map[string]any
// is stored, and published, as an amqp091.Table.

const maxHeaderDepth = wire.MaxHeaderDepth

// encodeHeaders returns the stored form of headers; nil headers are stored as
// NULL (ok false).
func encodeHeaders(headers map[string]any) (text string, ok bool, err error) {
	if headers == nil {
		return "", false, nil
	}
	for name := range headers {
		if wire.IsReserved(name) {
			return "", false, wire.ReservedHeaderError(name)
		}
	}
	tagged, err := tagTable(headers, 0)
	if err != nil {
		return "", false, err
	}
	raw, err := json.Marshal(tagged)
	if err != nil {
		return "", false, fmt.Errorf("sqlmq: encode headers: %w", err)
	}
	return string(raw), true, nil
}

func tagTable(table map[string]any, depth int) (map[string]map[string]any, error) {
	out := make(map[string]map[string]any, len(table))
	for name, value := range table {
		tagged, err := tagValue(value, depth)
		if err != nil {
			return nil, fmt.Errorf("sqlmq: header %q: %w", name, err)
		}
		out[name] = tagged
	}
	return out, nil
}

func tagValue(value any, depth int) (map[string]any, error) {
	if depth > maxHeaderDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxHeaderDepth)
	}
	switch v := value.(type) {
	case nil:
		return map[string]any{"nil": true}, nil
	case string:
		return map[string]any{"s": v}, nil
	case bool:
		return map[string]any{"bool": v}, nil
	case int, int8, int16, int32, int64, uint8, uint16, uint32, float32, float64:
		return tagNumber(v), nil
	case []byte:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString(v)}, nil
	case time.Time:
		return map[string]any{"time": v.Format(time.RFC3339Nano)}, nil
	case amqp.Decimal:
		return map[string]any{"decimal": []string{strconv.FormatUint(uint64(v.Scale), 10), strconv.FormatInt(int64(v.Value), 10)}}, nil
	case amqp.Table:
		inner, err := tagTable(v, depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"table": inner}, nil
	case map[string]any: // AMQP carries nested tables only as amqp091.Table
		inner, err := tagTable(v, depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"table": inner}, nil
	case []any:
		items := make([]map[string]any, len(v))
		for i, item := range v {
			tagged, err := tagValue(item, depth+1)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			items[i] = tagged
		}
		return map[string]any{"array": items}, nil
	default:
		return nil, fmt.Errorf("a %T cannot travel in an AMQP table; use a string, bool, int, int8-int64, uint8-uint32, float32, float64, []byte, time.Time, amqp091 Decimal, a nested amqp091.Table (or map[string]any, stored as one) or []any", value)
	}
}

// numberTag is the tag tagValue stores each numeric Go type under;
// numberTags reads them back.
var numberTag = map[reflect.Kind]string{
	reflect.Int: "int", reflect.Int8: "i8", reflect.Int16: "i16", reflect.Int32: "i32", reflect.Int64: "i64",
	reflect.Uint8: "u8", reflect.Uint16: "u16", reflect.Uint32: "u32", reflect.Float32: "f32", reflect.Float64: "f64",
}

// tagNumber stores one of the numeric types AMQP carries (tagValue passes no
// other) as its tag and its exact decimal text.
func tagNumber(v any) map[string]any {
	r := reflect.ValueOf(v)
	var text string
	switch {
	case r.CanInt():
		text = strconv.FormatInt(r.Int(), 10)
	case r.CanUint():
		text = strconv.FormatUint(r.Uint(), 10)
	default:
		text = strconv.FormatFloat(r.Float(), 'g', -1, r.Type().Bits())
	}
	return map[string]any{numberTag[r.Kind()]: text}
}

// decodeHeaders reverses encodeHeaders. The text is read back from the
// database, so it is treated as untrusted: every malformed input is an error.
func decodeHeaders(text string, ok bool) (map[string]any, error) {
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	var tagged map[string]json.RawMessage
	if err := dec.Decode(&tagged); err != nil {
		return nil, fmt.Errorf("sqlmq: stored headers are not a JSON object: %w", err)
	}
	if tagged == nil {
		return nil, fmt.Errorf("sqlmq: stored headers are null")
	}
	if dec.More() {
		return nil, fmt.Errorf("sqlmq: stored headers have trailing data")
	}
	return untagTable(tagged, 0)
}

func untagTable(tagged map[string]json.RawMessage, depth int) (map[string]any, error) {
	out := make(map[string]any, len(tagged))
	names := make([]string, 0, len(tagged))
	for name := range tagged {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value, err := untagValue(tagged[name], depth)
		if err != nil {
			return nil, fmt.Errorf("sqlmq: stored header %q: %w", name, err)
		}
		out[name] = value
	}
	return out, nil
}

func untagValue(raw json.RawMessage, depth int) (any, error) {
	if depth > maxHeaderDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxHeaderDepth)
	}
	var tagged map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tagged); err != nil {
		return nil, fmt.Errorf("not a tagged value: %w", err)
	}
	if len(tagged) != 1 {
		return nil, fmt.Errorf("a tagged value has exactly one type tag, found %d", len(tagged))
	}
	for tag, body := range tagged {
		return untag(tag, body, depth)
	}
	return nil, nil // unreachable
}

func untag(tag string, body json.RawMessage, depth int) (any, error) {
	switch tag {
	case "nil":
		return nil, nil
	case "s":
		var s string
		return s, json.Unmarshal(body, &s)
	case "bool":
		var b bool
		return b, json.Unmarshal(body, &b)
	case "bytes":
		return untagText(body, base64.StdEncoding.DecodeString)
	case "time":
		return untagText(body, func(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) })
	case "decimal":
		return untagDecimal(body)
	case "table":
		return untagNestedTable(body, depth)
	case "array":
		return untagArray(body, depth)
	default:
		if read, ok := numberTags[tag]; ok {
			return read(body)
		}
		return nil, fmt.Errorf("unknown type tag %q", tag)
	}
}

// untagText reads a value stored as a JSON string and parsed by parse.
func untagText[T any](body json.RawMessage, parse func(string) (T, error)) (T, error) {
	var s string
	if err := json.Unmarshal(body, &s); err != nil {
		var zero T
		return zero, err
	}
	return parse(s)
}

// numberTags reads each numeric tag's value into the Go type tagValue wrote
// it from.
var numberTags = map[string]func(json.RawMessage) (any, error){
	"int": untagNumber[int](parseInt), "i8": untagNumber[int8](parseInt), "i16": untagNumber[int16](parseInt),
	"i32": untagNumber[int32](parseInt), "i64": untagNumber[int64](parseInt),
	"u8": untagNumber[uint8](parseUint), "u16": untagNumber[uint16](parseUint), "u32": untagNumber[uint32](parseUint),
	"f32": untagNumber[float32](strconv.ParseFloat), "f64": untagNumber[float64](strconv.ParseFloat),
}

// untagNumber returns the reader of a number stored as a JSON string: it
// parses the string with parse, refusing a number that T cannot hold, and
// returns it as T.
func untagNumber[T int | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | float32 | float64, N int64 | uint64 | float64](parse func(string, int) (N, error)) func(json.RawMessage) (any, error) {
	bits := reflect.TypeFor[T]().Bits()
	return func(body json.RawMessage) (any, error) {
		n, err := untagText(body, func(s string) (N, error) { return parse(s, bits) })
		if err != nil {
			return nil, err
		}
		return T(n), nil
	}
}

func parseInt(s string, bits int) (int64, error)   { return strconv.ParseInt(s, 10, bits) }
func parseUint(s string, bits int) (uint64, error) { return strconv.ParseUint(s, 10, bits) }

func untagDecimal(body json.RawMessage) (any, error) {
	var parts []string
	if err := json.Unmarshal(body, &parts); err != nil {
		return nil, err
	}
	if len(parts) != 2 {
		return nil, fmt.Errorf("a decimal has a scale and a value")
	}
	scale, err := strconv.ParseUint(parts[0], 10, 8)
	if err != nil {
		return nil, err
	}
	value, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil {
		return nil, err
	}
	return amqp.Decimal{Scale: uint8(scale), Value: int32(value)}, nil
}

func untagNestedTable(body json.RawMessage, depth int) (any, error) {
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(body, &inner); err != nil {
		return nil, err
	}
	if inner == nil {
		return nil, fmt.Errorf("a table is null")
	}
	table, err := untagTable(inner, depth+1)
	if err != nil {
		return nil, err
	}
	return amqp.Table(table), nil
}

func untagArray(body json.RawMessage, depth int) (any, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, item := range items {
		value, err := untagValue(item, depth+1)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out[i] = value
	}
	return out, nil
}
