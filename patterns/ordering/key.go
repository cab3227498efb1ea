package ordering

import (
	"fmt"

	"github.com/warrenmq/messaging"
)

// Key names what a message is about; messages with one key are handled one
// at a time, in arrival order. It receives the decoded message and its
// envelope. An empty key means the message is not ordered.
type Key func(message any, delivery messaging.Delivery) string

// ByHeader keys messages by the header name (fmt.Sprint of its value, so an
// integer header and its text agree). A message without the header is not
// ordered.
func ByHeader(name string) Key {
	return func(_ any, delivery messaging.Delivery) string {
		value, ok := delivery.Headers[name]
		if !ok || value == nil {
			return ""
		}
		return fmt.Sprint(value)
	}
}

// ByCorrelation keys messages by their correlation id, so the messages of one
// conversation or workflow run are handled in order. A message without one is
// not ordered.
func ByCorrelation() Key {
	return func(_ any, delivery messaging.Delivery) string { return delivery.CorrelationID }
}
