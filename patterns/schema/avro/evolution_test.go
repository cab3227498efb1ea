package avro

import (
	"reflect"
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/schema"
)

// evolution is one reading of a message written with one version of the
// order's schema by a consumer that may have a reader schema.
type evolution struct {
	name   string
	writer int    // which schema the publisher writes: 1 or 2
	reader string // the consumer's reader schema, or "" for none
	target reflect.Type
	want   any
}

// The schema evolves both ways: a consumer of version 2 reads what a
// publisher of version 1 still writes, and a consumer of version 1 reads what
// a publisher of version 2 already writes. With no reader schema nothing is
// resolved: the message reads as written. With one, the reader's defaults
// fill what the writer lacked and what the reader does not declare is
// skipped.
var evolutions = []evolution{
	{"v1 read as written into a v2 struct: the new fields stay zero", 1, "", typeV2, orderV2{ID: "o-1", Total: 4200}},
	{"v1 resolved onto v2: the new fields take v2's defaults", 1, schemaV2, typeV2, orderV2{ID: "o-1", Total: 4200, Currency: "EUR", Note: "none"}},
	{"v2 read as written into a v1 struct: the new fields are skipped", 2, "", typeV1, orderV1{ID: "o-1", Total: 4200}},
	{"v2 read as written into a v2 struct: every field as written", 2, "", typeV2, orderV2{ID: "o-1", Total: 4200, Currency: "USD", Note: "gift"}},
	{"v2 resolved onto v1 into a v2 struct: what v1 does not declare is skipped", 2, schemaV1, typeV2, orderV2{ID: "o-1", Total: 4200}},
	{"v1 resolved onto v1: nothing to resolve", 1, schemaV1, typeV1, orderV1{ID: "o-1", Total: 4200}},
}

// checkEvolutions publishes with each version against registry and reads
// each evolution with a consumer of its own.
func checkEvolutions(t *testing.T, registry schema.Registry) {
	t.Helper()
	v1, err := NewRegistered(registry, Options.Write(typeV1, "order-evolving", schemaV1))
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := NewRegistered(registry, Options.Write(typeV2, "order-evolving", schemaV2))
	first, err := v1.Serialize(orderV1{ID: "o-1", Total: 4200})
	if err != nil {
		t.Fatal(err)
	}
	second, err := v2.Serialize(orderV2{ID: "o-1", Total: 4200, Currency: "USD", Note: "gift"})
	if err != nil {
		t.Fatal(err)
	}
	if string(first[:5]) == string(second[:5]) {
		t.Fatalf("both versions carry the schema id % x", first[:5])
	}
	for _, e := range evolutions {
		var options []Option
		if e.reader != "" {
			options = append(options, Options.Read(e.target, e.reader))
		}
		consumer, err := NewRegistered(registry, options...)
		if err != nil {
			t.Fatal(err)
		}
		payload := map[int][]byte{1: first, 2: second}[e.writer]
		target := reflect.New(e.target)
		if err := consumer.Deserialize(payload, target.Interface()); err != nil {
			t.Errorf("%s: %v", e.name, err)
			continue
		}
		if got := target.Elem().Interface(); got != e.want {
			t.Errorf("%s:\n got %+v\nwant %+v", e.name, got, e.want)
		}
	}
}

func TestTheSchemaEvolvesBothWaysOnTheMemoryRegistry(t *testing.T) {
	checkEvolutions(t, schema.NewMemoryRegistry())
}

// A reader schema that cannot read the writer's (a field it adds has no
// default) is fatal: the message is parked, not retried for ever.
func TestAReaderSchemaThatCannotReadTheWritersIsFatal(t *testing.T) {
	registry := schema.NewMemoryRegistry()
	writer, _ := NewRegistered(registry, Options.Write(typeV1, "order", schemaV1))
	payload, _ := writer.Serialize(orderV1{ID: "o"})
	strict := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"total","type":"long"},{"name":"region","type":"string"}]}`
	reader, _ := NewRegistered(registry, Options.Read(typeV2, strict))
	err := reader.Deserialize(payload, new(orderV2))
	if err == nil || !messaging.IsFatal(err) {
		t.Fatalf("an incompatible reader schema: %v", err)
	}
}
