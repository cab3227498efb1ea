package avro

import (
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestPlainFixture(t *testing.T) {
	gunit.Run(new(PlainFixture), t)
}

type PlainFixture struct {
	*gunit.Fixture
}

func (f *PlainFixture) codec(definition string, options ...Option) *Codec {
	codec, err := NewPlain(definition, options...)
	f.So(err, should.BeNil)
	return codec
}

func (f *PlainFixture) TestTheContentTypeIsAvroBinary() {
	f.So(f.codec(schemaV1).ContentType(), should.Equal, "avro/binary")
}

func (f *PlainFixture) TestAPayloadIsTheAvroEncodingAloneAndRoundTrips() {
	codec := f.codec(schemaV1)
	payload, err := codec.Serialize(orderV1{ID: "o-1", Total: 4200})
	f.So(err, should.BeNil)
	body, _ := hamba.Marshal(hamba.MustParse(schemaV1), orderV1{ID: "o-1", Total: 4200})
	f.So(payload, should.Resemble, body)
	var decoded orderV1
	f.So(codec.Deserialize(payload, &decoded), should.BeNil)
	f.So(decoded, should.Equal, orderV1{ID: "o-1", Total: 4200})
}

func (f *PlainFixture) TestWithoutAReaderSchemaAMessageReadsAsWritten() {
	payload, _ := f.codec(schemaV2).Serialize(orderV2{ID: "o-1", Total: 1, Currency: "USD", Note: "gift"})
	var narrow orderV1
	f.So(f.codec(schemaV2).Deserialize(payload, &narrow), should.BeNil)
	f.So(narrow, should.Equal, orderV1{ID: "o-1", Total: 1})
}

func (f *PlainFixture) TestAReaderSchemaResolvesBothWays() {
	old, _ := f.codec(schemaV1).Serialize(orderV1{ID: "o-1", Total: 1})
	var wide orderV2
	f.So(f.codec(schemaV1, Options.Read(typeV2, schemaV2)).Deserialize(old, &wide), should.BeNil)
	f.So(wide, should.Equal, orderV2{ID: "o-1", Total: 1, Currency: "EUR", Note: "none"})

	fresh, _ := f.codec(schemaV2).Serialize(orderV2{ID: "o-1", Total: 1, Currency: "USD", Note: "gift"})
	wide = orderV2{}
	f.So(f.codec(schemaV2, Options.Read(typeV2, schemaV1)).Deserialize(fresh, &wide), should.BeNil)
	f.So(wide, should.Equal, orderV2{ID: "o-1", Total: 1})
}

func (f *PlainFixture) TestAReaderSchemaThatCannotReadThePlainOneIsRefusedAtConstruction() {
	strict := `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"region","type":"string"}]}`
	codec, err := NewPlain(schemaV1, Options.Read(typeV2, strict))
	f.So(codec, should.BeNil)
	f.So(err.Error(), should.ContainSubstring, "give every field the plain schema lacks a default")
}

func (f *PlainFixture) TestUnusableSchemasAndOptionsAreRefused() {
	for _, build := range []func() (*Codec, error){
		func() (*Codec, error) { return NewPlain(`{"type":`) },
		func() (*Codec, error) { return NewPlain(schemaV1, Options.Write(typeV1, "order", schemaV1)) },
		func() (*Codec, error) { return NewPlain(schemaV1, Options.Read(typeV1, `{}`)) },
	} {
		codec, err := build()
		f.So(codec, should.BeNil)
		f.So(err, should.NotBeNil)
	}
}

func (f *PlainFixture) TestAValueTheSchemaCannotWriteIsRefused() {
	_, err := f.codec(schemaV1).Serialize("a string, not an order")
	f.So(err.Error(), should.ContainSubstring, "cannot be written with the plain codec's schema")
}

// A registered payload read as plain: the 0x00 and the schema id shift every
// field, and the leftover bytes give it away instead of wrong values.
func (f *PlainFixture) TestARegisteredPayloadReadAsPlainIsRefused() {
	registered := append([]byte{0x00, 0x00, 0x00, 0x00, 0x07}, mustMarshal(schemaV1, orderV1{ID: "order-1", Total: 4200})...)
	err := f.codec(schemaV1).Deserialize(registered, new(orderV1))
	f.So(err, should.NotBeNil)
}

func (f *PlainFixture) TestATargetThatIsNotAPointerIsRefused() {
	payload, _ := f.codec(schemaV1).Serialize(orderV1{})
	for _, target := range []any{nil, orderV1{}, (*orderV1)(nil)} {
		f.So(f.codec(schemaV1).Deserialize(payload, target), should.NotBeNil)
	}
}

func (f *PlainFixture) TestAnOversizedValueIsRefusedBeforeItIsAllocated() {
	codec := f.codec(`"string"`, Options.MaxValueBytes(16))
	claim := []byte{0xfe, 0xff, 0xff, 0xff, 0x0f} // a string of 2^31-1 bytes
	var text string
	err := codec.Deserialize(claim, &text)
	f.So(err.Error(), should.ContainSubstring, "MaxByteSliceSize")
	payload, _ := codec.Serialize("sixteen bytes ok")
	f.So(codec.Deserialize(payload, &text), should.BeNil)
}

func mustMarshal(definition string, value any) []byte {
	payload, err := hamba.Marshal(hamba.MustParse(definition), value)
	if err != nil {
		panic(err) // a fixture of the tests
	}
	return payload
}

func TestContentTypesFixture(t *testing.T) {
	gunit.Run(new(ContentTypesFixture), t)
}

type ContentTypesFixture struct {
	*gunit.Fixture
	registered, plain *Codec
}

func (f *ContentTypesFixture) Setup() {
	f.registered, _ = NewRegistered(newFakeRegistry())
	f.plain, _ = NewPlain(schemaV1)
}

func (f *ContentTypesFixture) TestEachModeAcceptsItsOwnTheGenericAndAnyPlusAvroType() {
	for _, contentType := range []string{"application/avro", "Application/AVRO; charset=binary", "application/vnd.orders+avro"} {
		f.So(f.registered.Accepts(contentType), should.BeTrue)
		f.So(f.plain.Accepts(contentType), should.BeTrue)
	}
	f.So(f.registered.Accepts("application/vnd.acemq.avro"), should.BeTrue)
	f.So(f.plain.Accepts("avro/binary"), should.BeTrue)
}

func (f *ContentTypesFixture) TestEachModeRefusesTheOthersOwnType() {
	f.So(f.registered.Accepts("avro/binary"), should.BeFalse)
	f.So(f.plain.Accepts("application/vnd.acemq.avro"), should.BeFalse)
	_, err := f.registered.ContentTypes("avro/binary")
	f.So(err.Error(), should.ContainSubstring, "avro.NewPlain")
	_, err = f.plain.ContentTypes("application/vnd.acemq.avro")
	f.So(err.Error(), should.ContainSubstring, "avro.NewRegistered")
}

func (f *ContentTypesFixture) TestNeitherAcceptsAnotherFormat() {
	for _, contentType := range []string{"application/json", "", "application/avro-json", "text/avro"} {
		f.So(f.registered.Accepts(contentType), should.BeFalse)
		f.So(f.plain.Accepts(contentType), should.BeFalse)
	}
}

func (f *ContentTypesFixture) TestContentTypesListsWhatToRegister() {
	types, err := f.registered.ContentTypes("application/vnd.orders+avro")
	f.So(err, should.BeNil)
	f.So(types, should.Resemble, []string{"application/vnd.acemq.avro", "application/avro", "+avro", "application/vnd.orders+avro"})
	types, _ = f.plain.ContentTypes()
	f.So(types, should.Resemble, []string{"avro/binary", "application/avro", "+avro"})
}
