package protobuf

import (
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestCodecFixture(t *testing.T) {
	gunit.Run(new(CodecFixture), t)
}

type CodecFixture struct {
	*gunit.Fixture
	codec Codec
}

func (f *CodecFixture) TestTheContentType() {
	f.So(f.codec.ContentType(), should.Equal, "application/x-protobuf")
}

func (f *CodecFixture) TestAMessageRoundTripsIntoANewMessageBehindAPointer() {
	payload, err := f.codec.Serialize(wrapperspb.String("order-1"))
	f.So(err, should.BeNil)
	var decoded *wrapperspb.StringValue // what serialization passes for a registered *T
	f.So(f.codec.Deserialize(payload, &decoded), should.BeNil)
	f.So(decoded.GetValue(), should.Equal, "order-1")
}

func (f *CodecFixture) TestAMessageRoundTripsIntoAMessage() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	payload, _ := f.codec.Serialize(timestamppb.New(at))
	decoded := &timestamppb.Timestamp{}
	f.So(f.codec.Deserialize(payload, decoded), should.BeNil)
	f.So(decoded.AsTime(), should.Equal, at)
}

func (f *CodecFixture) TestTheBytesAreProtobufsOwn() {
	message, _ := structpb.NewStruct(map[string]any{"id": "o-1", "total": 42.5, "lines": []any{"a", "b"}})
	payload, _ := f.codec.Serialize(message)
	want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(message)
	f.So(payload, should.Resemble, want)
	var decoded *structpb.Struct
	f.So(f.codec.Deserialize(payload, &decoded), should.BeNil)
	f.So(proto.Equal(decoded, message), should.BeTrue)
}

func (f *CodecFixture) TestOneMessageAlwaysGivesTheSameBytes() {
	fields := map[string]any{}
	for i := range 50 {
		fields[string(rune('a'+i%26))+string(rune('a'+i/26))] = float64(i)
	}
	message, _ := structpb.NewStruct(fields)
	first, _ := f.codec.Serialize(message)
	for range 20 {
		again, _ := f.codec.Serialize(message)
		f.So(again, should.Resemble, first)
	}
}

func (f *CodecFixture) TestAValueThatIsNotAMessageIsRefusedSayingWhatToWrite() {
	_, err := f.codec.Serialize(struct{ ID string }{"o-1"})
	f.So(err.Error(), should.ContainSubstring, "is not a proto.Message")
	f.So(err.Error(), should.ContainSubstring, "WriteTypes")
}

func (f *CodecFixture) TestATargetThatIsNotAMessageIsRefusedSayingWhatToRegister() {
	payload, _ := f.codec.Serialize(wrapperspb.String("x"))
	var text string
	var typedNil *wrapperspb.StringValue
	for _, target := range []any{&text, nil, "x", typedNil, new(*string)} {
		err := f.codec.Deserialize(payload, target)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, "ReadTypes")
	}
}

func (f *CodecFixture) TestBytesThatAreNotProtobufAreRefusedNamingTheType() {
	var decoded *wrapperspb.StringValue
	err := f.codec.Deserialize([]byte{0x0a, 0x05, 'x'}, &decoded) // a string field cut short
	f.So(err.Error(), should.ContainSubstring, "google.protobuf.StringValue")
}

// A dynamic message without a descriptor is no message type: refused, not a
// panic.
func (f *CodecFixture) TestADynamicMessageWithoutADescriptorIsRefused() {
	var decoded *dynamicpb.Message
	f.So(func() { _ = f.codec.Deserialize([]byte{0x0a, 0x01, 'x'}, &decoded) }, should.NotPanic)
}
