package avro

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/schema"
)

func TestRegisteredFixture(t *testing.T) {
	gunit.Run(new(RegisteredFixture), t)
}

type RegisteredFixture struct {
	*gunit.Fixture
	registry *fakeRegistry
}

func (f *RegisteredFixture) Setup() {
	f.registry = newFakeRegistry()
}

func (f *RegisteredFixture) codec(options ...Option) *Codec {
	codec, err := NewRegistered(f.registry, options...)
	f.So(err, should.BeNil)
	return codec
}

func (f *RegisteredFixture) writerV1() *Codec {
	return f.codec(Options.Write(typeV1, "order", schemaV1))
}
func (f *RegisteredFixture) writerV2() *Codec {
	return f.codec(Options.Write(typeV2, "order", schemaV2))
}

func (f *RegisteredFixture) TestTheContentTypeIsTheFamilysRegisteredOne() {
	f.So(f.writerV1().ContentType(), should.Equal, "application/vnd.acemq.avro")
}

func (f *RegisteredFixture) TestAPayloadIsZeroTheSchemaIDBigEndianAndTheAvroEncoding() {
	_, _ = f.registry.Register(context.Background(), "other", Format, `"string"`) // so the order's id is 2
	payload, err := f.writerV1().Serialize(orderV1{ID: "o-1", Total: 4200})
	f.So(err, should.BeNil)
	f.So(payload[:5], should.Resemble, []byte{0x00, 0x00, 0x00, 0x00, 0x02})
	body, _ := hamba.Marshal(hamba.MustParse(schemaV1), orderV1{ID: "o-1", Total: 4200})
	f.So(payload[5:], should.Resemble, body)
}

func (f *RegisteredFixture) TestAMessageRoundTripsAsAValueOrAPointer() {
	codec := f.writerV1()
	for _, message := range []any{orderV1{ID: "o-1", Total: 1}, &orderV1{ID: "o-1", Total: 1}} {
		payload, err := codec.Serialize(message)
		f.So(err, should.BeNil)
		var decoded orderV1
		f.So(codec.Deserialize(payload, &decoded), should.BeNil)
		f.So(decoded, should.Equal, orderV1{ID: "o-1", Total: 1})
	}
}

func (f *RegisteredFixture) TestTheSchemaIsRegisteredOnceAndFetchedOnce() {
	writer, reader := f.writerV1(), f.codec()
	for range 5 {
		payload, _ := writer.Serialize(orderV1{ID: "o"})
		var decoded map[string]any
		f.So(reader.Deserialize(payload, &decoded), should.BeNil)
		f.So(decoded["id"], should.Equal, "o")
	}
	registers, byIDs, _ := f.registry.counts()
	f.So(registers, should.Equal, 1)
	f.So(byIDs, should.Equal, 1)
	versions, _ := f.registry.Versions(context.Background(), "order")
	f.So(len(versions), should.Equal, 1)
	f.So(versions[0].Format, should.Equal, "avro")
}

func (f *RegisteredFixture) TestRegisterRegistersEverySchemaAtStartUp() {
	codec := f.codec(Options.Write(typeV1, "order", schemaV1), Options.Write(typeV2, "order", schemaV2))
	f.So(codec.Register(context.Background()), should.BeNil)
	versions, _ := f.registry.Versions(context.Background(), "order")
	f.So(len(versions), should.Equal, 2)
	_, _ = codec.Serialize(orderV1{})
	registers, _, _ := f.registry.counts()
	f.So(registers, should.Equal, 2)
}

func (f *RegisteredFixture) TestAnUnreachableRegistryAtStartUpIsRetryable() {
	f.registry.setDown(errRegistryDown)
	err := f.writerV1().Register(context.Background())
	f.So(messaging.IsRetryable(err), should.BeTrue)
	f.So(messaging.IsOutage(err), should.BeTrue)
}

func (f *RegisteredFixture) TestAWriteWhileTheRegistryIsDownFailsRetryablyAndWorksOnceItAnswers() {
	codec := f.writerV1()
	f.registry.setDown(errRegistryDown)
	_, err := codec.Serialize(orderV1{ID: "o"})
	f.So(messaging.IsRetryable(err), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeFalse)
	f.registry.setDown(nil)
	_, err = codec.Serialize(orderV1{ID: "o"})
	f.So(err, should.BeNil)
}

func (f *RegisteredFixture) TestAGoTypeWithoutASchemaIsRefusedSayingWhatToAdd() {
	_, err := f.writerV1().Serialize(orderV2{})
	f.So(errors.Is(err, ErrUnknownWriteType), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "avro.Options.Write(reflect.TypeFor[avro.orderV2]()")
}

func (f *RegisteredFixture) TestAnIDTheRegistryDoesNotHoldIsFatal() {
	payload := []byte{0x00, 0x00, 0x00, 0x30, 0x39, 0x02, 'x'} // id 12345
	var decoded orderV1
	err := f.codec().Deserialize(payload, &decoded)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(messaging.IsRetryable(err), should.BeFalse)
	f.So(errors.Is(err, schema.ErrSchemaNotFound), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "schema id 12345")
}

func (f *RegisteredFixture) TestAnIDThatCannotBeFetchedIsRetryableAndFetchedAgainLater() {
	payload, _ := f.writerV1().Serialize(orderV1{ID: "o"})
	reader := f.codec()
	f.registry.setDown(errRegistryDown)
	var decoded orderV1
	err := reader.Deserialize(payload, &decoded)
	f.So(messaging.IsRetryable(err), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeFalse)
	f.So(errors.Is(err, errRegistryDown), should.BeTrue)
	f.registry.setDown(nil)
	f.So(reader.Deserialize(payload, &decoded), should.BeNil)
	f.So(decoded.ID, should.Equal, "o")
}

// Each registry call is bounded: a registry that never answers fails the
// write and the read after Options.Timeout, retryably.
func TestARegistryThatHangsIsGivenUpOnAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		registry := newFakeRegistry()
		registry.hang = true
		codec, _ := NewRegistered(registry, Options.Write(typeV1, "order", schemaV1), Options.Timeout(3*time.Second))
		start := time.Now()
		_, err := codec.Serialize(orderV1{})
		if !errors.Is(err, context.DeadlineExceeded) || !messaging.IsRetryable(err) || time.Since(start) != 3*time.Second {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		err = codec.Deserialize([]byte{0, 0, 0, 0, 1, 0, 0}, new(orderV1))
		if !errors.Is(err, context.DeadlineExceeded) || !messaging.IsRetryable(err) || time.Since(start) != 6*time.Second {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
	})
}

func (f *RegisteredFixture) TestAPayloadWithoutTheFramingIsFatal() {
	plain, _ := hamba.Marshal(hamba.MustParse(schemaV1), orderV1{ID: "o"})
	for _, payload := range [][]byte{plain, nil, {0x00, 0x00, 0x01}} {
		err := f.codec().Deserialize(payload, new(orderV1))
		f.So(errors.Is(err, ErrNotFramed), should.BeTrue)
		f.So(messaging.IsFatal(err), should.BeTrue)
	}
	_, byIDs, _ := f.registry.counts()
	f.So(byIDs, should.Equal, 0)
}

func (f *RegisteredFixture) TestAnIDOfAnotherFormatIsFatal() {
	s, _ := f.registry.Register(context.Background(), "order", "json-schema", `{"type":"object"}`)
	payload := binary.BigEndian.AppendUint32([]byte{0}, uint32(s.ID))
	err := f.codec().Deserialize(append(payload, 0x02, 'x'), new(orderV1))
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, `"json-schema"`)
}

func (f *RegisteredFixture) TestBytesLeftAfterTheRecordAreRefused() {
	payload, _ := f.writerV1().Serialize(orderV1{ID: "o"})
	err := f.codec().Deserialize(append(payload, 0x00), new(orderV1))
	f.So(err.Error(), should.ContainSubstring, "bytes are left after it")
}

func (f *RegisteredFixture) TestAnIDTheFramingCannotCarryIsRefused() {
	for _, id := range []int64{0, -1, math.MaxInt32 + 1} {
		codec, _ := NewRegistered(idRegistry{id: id}, Options.Write(typeV1, "order", schemaV1))
		_, err := codec.Serialize(orderV1{})
		f.So(messaging.IsFatal(err), should.BeTrue)
	}
}

func (f *RegisteredFixture) TestALookUpOnlyWriterFindsARegisteredSchemaAndRefusesAMissingOne() {
	codec := f.codec(Options.Write(typeV1, "order", schemaV1), Options.RegisterSchemas(false))
	_, err := codec.Serialize(orderV1{})
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "register it first")
	_, _ = f.registry.MemoryRegistry.Register(context.Background(), "order", Format, schemaV1)
	_, err = codec.Serialize(orderV1{})
	f.So(err, should.BeNil)
	registers, _, prints := f.registry.counts()
	f.So(registers, should.Equal, 0)
	f.So(prints, should.Equal, 2)
}

func (f *RegisteredFixture) TestUnusableOptionsAreRefusedAtConstruction() {
	for _, options := range [][]Option{
		{Options.Write(typeV1, "order", `{"type":"record"`)},
		{Options.Write(typeV1, "", schemaV1)},
		{Options.Write(typeV1, "a", schemaV1), Options.Write(typeV1, "b", schemaV1)},
		{Options.Write(nil, "a", schemaV1)},
		{Options.Read(typeV1, `"no such type"`)},
	} {
		codec, err := NewRegistered(f.registry, options...)
		f.So(codec, should.BeNil)
		f.So(err, should.NotBeNil)
	}
	_, err := NewRegistered(nil)
	f.So(err.Error(), should.ContainSubstring, "needs a schema registry")
}
