package streams_test

import (
	"fmt"
	"time"

	"github.com/warrenmq/messaging/patterns/streams"
)

// The declaration as a topology plan, printed.
func ExamplePlan() {
	fmt.Print(streams.Plan("orders.log", streams.Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 30}))
	// Output: declare queue orders.log (stream, durable, x-max-age=7D, x-max-length-bytes=10737418240)
}

// The x-max-age spellings.
func ExampleMaxAgeText() {
	for _, age := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, 90 * time.Minute, time.Hour} {
		fmt.Println(streams.MaxAgeText(age))
	}
	// Output:
	// 7D
	// 1D
	// 90m
	// 1h
}
