package outage

import (
	"errors"
	"testing"

	"github.com/warrenmq/messaging"
)

func TestOfFindsOnlyErrorsMarkedAsOutages(t *testing.T) {
	down := messaging.Outage(errors.New("database unreachable"))
	if err, ok := Of(down); !ok || err != down {
		t.Fatalf("an outage: %v %v", err, ok)
	}
	for _, value := range []any{errors.New("bad order"), "database unreachable", nil, 42} {
		if _, ok := Of(value); ok {
			t.Fatalf("%v is not an outage", value)
		}
	}
}
