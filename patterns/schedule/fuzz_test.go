package schedule

import (
	"strings"
	"testing"

	"github.com/warrenmq/messaging"
)

// FuzzRead feeds the control consumer's header reader what another
// publisher could put on acemq.schedule.due: it never panics, a message it
// accepts has the destination and due time it was given, and one it refuses
// is refused as fatal with one of the two texts.
func FuzzRead(f *testing.F) {
	f.Add("billing", "invoice.due", "1767225600000", "application/json", true)
	f.Add("", "q", "soon", "", true)
	f.Add("x", "", "-1", "text/plain", true)
	f.Add("x", "k", "9223372036854775807", "", true)
	f.Add("x", "k", "1e30", "", false)
	f.Fuzz(func(t *testing.T, exchange, key, dueAt, contentType string, complete bool) {
		headers := map[string]any{HeaderExchange: exchange, HeaderRoutingKey: []byte(key), HeaderDueAt: dueAt, HeaderContentType: contentType}
		if !complete {
			delete(headers, HeaderRoutingKey)
		}
		m, err := read(messaging.Delivery{MessageID: "m", Headers: headers, Payload: []byte(dueAt)})
		if err != nil {
			if !messaging.IsFatal(err) {
				t.Fatalf("refused without Fatal: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "acemq: ") {
				t.Fatalf("refused with %q", err)
			}
			if complete && strings.Contains(err.Error(), "without the headers") {
				t.Fatalf("complete headers read as missing: %v", err)
			}
			return
		}
		if !complete || m.exchange != exchange || m.routingKey != key || m.contentType != contentType || string(m.payload) != dueAt {
			t.Fatalf("read %+v from %v", m, headers)
		}
	})
}
