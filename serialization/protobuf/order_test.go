package protobuf

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/warrenmq/messaging/serialization/internal/codectest"
)

// orderDescriptor describes codectest.Order as a .proto file would, built in
// code because the tests generate nothing:
//
//	message Order { string id = 1; string customer = 2; string currency = 3;
//	                double total = 4; repeated Line lines = 5; }
//	message Line  { string sku = 1; int32 quantity = 2; double price = 3; }
var orderDescriptor = func() protoreflect.MessageDescriptor {
	field := func(name string, number int32, kind descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(number),
			Type: kind.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	}
	lines := field("lines", 5, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE)
	lines.Label, lines.TypeName = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), proto.String(".bench.Line")
	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("bench/order.proto"), Package: proto.String("bench"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Order"), Field: []*descriptorpb.FieldDescriptorProto{
				field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("customer", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("currency", 3, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("total", 4, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE),
				lines,
			}},
			{Name: proto.String("Line"), Field: []*descriptorpb.FieldDescriptorProto{
				field("sku", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("quantity", 2, descriptorpb.FieldDescriptorProto_TYPE_INT32),
				field("price", 3, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE),
			}},
		},
	}, nil)
	if err != nil {
		panic(err) // a test fixture: the descriptor above is fixed
	}
	return file.Messages().ByName("Order")
}()

// orderMessage is o as a dynamic protobuf message of orderDescriptor.
func orderMessage(o codectest.Order) *dynamicpb.Message {
	m := dynamicpb.NewMessage(orderDescriptor)
	fields := orderDescriptor.Fields()
	m.Set(fields.ByName("id"), protoreflect.ValueOfString(o.ID))
	m.Set(fields.ByName("customer"), protoreflect.ValueOfString(o.Customer))
	m.Set(fields.ByName("currency"), protoreflect.ValueOfString(o.Currency))
	m.Set(fields.ByName("total"), protoreflect.ValueOfFloat64(o.Total))
	list := m.Mutable(fields.ByName("lines")).List()
	lineFields := fields.ByName("lines").Message().Fields()
	for _, l := range o.Lines {
		line := list.NewElement()
		line.Message().Set(lineFields.ByName("sku"), protoreflect.ValueOfString(l.SKU))
		line.Message().Set(lineFields.ByName("quantity"), protoreflect.ValueOfInt32(int32(l.Quantity)))
		line.Message().Set(lineFields.ByName("price"), protoreflect.ValueOfFloat64(l.Price))
		list.Append(line)
	}
	return m
}
