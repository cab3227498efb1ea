package protobuf_test

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/warrenmq/messaging/serialization/protobuf"
)

// Example writes a protobuf message and reads it back as serialization does
// for a type registered by its pointer (here a well-known type; yours are
// generated from your .proto files).
func Example() {
	codec := protobuf.Codec{}
	order, _ := structpb.NewStruct(map[string]any{"id": "o-1", "total": 42.5})
	payload, err := codec.Serialize(order)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, %d bytes\n", codec.ContentType(), len(payload))

	var decoded *structpb.Struct // serialization passes a pointer to a nil *T
	if err := codec.Deserialize(payload, &decoded); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(decoded.Fields["id"].GetStringValue(), decoded.Fields["total"].GetNumberValue())

	_, err = codec.Serialize(map[string]any{"id": "o-1"})
	fmt.Println(err)
	// Output:
	// application/x-protobuf, 33 bytes
	// o-1 42.5
	// protobuf: map[string]interface {} is not a proto.Message; write the generated type's pointer (&pb.OrderPlaced{...}) and register that pointer type in WriteTypes
}
