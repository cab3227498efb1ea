package schema_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging/patterns/schema"
)

// Example registers a definition twice (as a service does at every start)
// and a changed one, then looks them up the ways a consumer does.
func Example() {
	ctx := context.Background()
	registry := schema.NewMemoryRegistry() // schema.NewSQLRegistry(db, sqldialect.PostgreSQL) for real
	v1 := `{"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"}]}`
	v2 := `{"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"},{"name":"note","type":["null","string"],"default":null}]}`

	first, _ := registry.Register(ctx, "order.placed", "avro", v1)
	again, _ := registry.Register(ctx, "order.placed", "avro", v1) // a restart adds no version
	second, _ := registry.Register(ctx, "order.placed", "avro", v2)
	fmt.Println("versions:", first.Version, again.Version, second.Version, "same id:", first.ID == again.ID)

	byID, _ := registry.ByID(ctx, second.ID) // the id a message carries
	latest, _ := registry.Latest(ctx, "order.placed")
	fmt.Println("by id:", byID.Version, "latest:", latest.Version, "fingerprint:", latest.Fingerprint[:12])

	_, err := registry.ByID(ctx, 99)
	fmt.Println(err, errors.Is(err, schema.ErrSchemaNotFound))
	// Output:
	// versions: 1 1 2 same id: true
	// by id: 2 latest: 2 fingerprint: 99b7b6c28a64
	// acemq: no such schema with id 99 true
}
