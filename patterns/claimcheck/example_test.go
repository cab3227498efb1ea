package claimcheck_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/claimcheck"
	"github.com/warrenmq/messaging/serialization"
)

// Scan is a message whose payload is sometimes tens of megabytes.
type Scan struct {
	Patient string `json:"patient"`
	Image   string `json:"image"`
}

// Example writes a small and a large Scan through the claim check on the
// in-memory transport: the small one travels inline, the large one in a
// filesystem store, and both read back as the same values.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "claims")
	defer os.RemoveAll(dir)
	store, err := claimcheck.NewFilesystemStore(dir) // a directory every service mounts
	if err != nil {
		fmt.Println(err)
		return
	}
	codec, err := claimcheck.New(nil, store) // JSON inside, 64 KiB threshold
	if err != nil {
		fmt.Println(err)
		return
	}

	broker := memory.New()
	defer broker.Close()
	_ = broker.DeclareExchange("scans", memory.KindFanout, true)
	_ = broker.DeclareQueue("radiology", memory.QueueOptions{Durable: true})
	_ = broker.Bind("radiology", "scans", "")
	encoded := serialization.New(broker,
		serialization.Options.Serializer(codec),
		serialization.Options.AddDeserializer(codec),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(Scan{}): "scans"}),
		serialization.Options.ReadTypes(map[string]reflect.Type{"scans": reflect.TypeOf(Scan{})}),
		serialization.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	connection, err := encoded.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()
	writer, err := connection.Writer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer writer.Close()
	_, err = writer.Write(ctx,
		messaging.Dispatch{Message: Scan{Patient: "p-1", Image: "thumbnail"}, Mandatory: true},
		messaging.Dispatch{Message: Scan{Patient: "p-2", Image: strings.Repeat("#", 5<<20)}, Mandatory: true},
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	reader, err := connection.Reader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reader.Close()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "radiology", BufferCapacity: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	for range 2 {
		var delivery messaging.Delivery
		if err := stream.Read(ctx, &delivery); err != nil {
			fmt.Println(err)
			return
		}
		scan := delivery.Message.(Scan)
		_, claimed := claimcheck.KeyOf(delivery.Payload)
		fmt.Printf("%s: %d bytes of image, a %d-byte body, claim checked %v, %s\n",
			scan.Patient, len(scan.Image), len(delivery.Payload), claimed, delivery.ContentType)
		_ = stream.Acknowledge(ctx, delivery)
	}
	// Output:
	// p-1: 9 bytes of image, a 40-byte body, claim checked false, application/json
	// p-2: 5242880 bytes of image, a 39-byte body, claim checked true, application/json
}
