package avro

import (
	"sync"
	"testing"
)

// One codec serves every goroutine of a service: the schema ids, the fetched
// and resolved schemas and the pooled readers and writers are shared safely
// (run with -race), and each schema is still registered and fetched once per
// goroutine that raced for it at most.
func TestOneCodecIsSafeForConcurrentUse(t *testing.T) {
	registry := newFakeRegistry()
	writer, _ := NewRegistered(registry, Options.Write(typeV1, "order", schemaV1), Options.Write(typeV2, "order", schemaV2))
	reader, _ := NewRegistered(registry, Options.Read(typeV2, schemaV2))
	const goroutines, messages = 8, 200
	failures := make(chan string, goroutines*messages)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range messages {
				var message any = orderV1{ID: "o", Total: int64(i)}
				if (g+i)%2 == 0 {
					message = orderV2{ID: "o", Total: int64(i), Currency: "USD", Note: "n"}
				}
				payload, err := writer.Serialize(message)
				if err != nil {
					failures <- err.Error()
					continue
				}
				var decoded orderV2
				if err := reader.Deserialize(payload, &decoded); err != nil || decoded.Total != int64(i) || decoded.Currency == "" {
					failures <- "decoded " + decoded.ID + " " + decoded.Currency
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for failure := range failures {
		t.Fatal(failure)
	}
	registers, byIDs, _ := registry.counts()
	if registers > 2*goroutines || byIDs > 2*goroutines {
		t.Fatalf("%d registrations and %d fetches for 2 schemas", registers, byIDs)
	}
}
