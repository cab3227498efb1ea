package wire

import (
	"bytes"
	"math"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TableValue returns an application header value, which Check has accepted,
// in the form amqp091 writes into an AMQP table without changing it: a
// nested map[string]any (which amqp091 refuses) becomes an amqp.Table, inside
// arrays and tables too, and an int that an AMQP int32 cannot hold becomes an
// int64 (amqp091 writes every int as an int32, cutting off its high bits).
// Arrays and tables are copied, so the result shares no container with
// value; any other value is returned as it is, without an allocation.
func TableValue(value any) any { return convert(value, false) }

// ReceivedValue returns an application header value as a consumer reads it
// after a trip through an AMQP table: TableValue's form, with an int as the
// int32 (or int64) it travels as, a time cut to whole seconds in the local
// zone, and bytes copied. The in-memory transport holds and delivers this, so
// that what its consumers read is what RabbitMQ's read, and no consumer can
// change what another reads.
func ReceivedValue(value any) any { return convert(value, true) }

// ReceivedHeaders is ReceivedValue of every header, or nil when there are
// none (as amqp091 delivers a message without headers).
func ReceivedHeaders(headers map[string]any) map[string]any {
	if len(headers) == 0 {
		return nil
	}
	received := make(map[string]any, len(headers))
	for name, value := range headers {
		received[name] = ReceivedValue(value)
	}
	return received
}

// convert is TableValue, and with received ReceivedValue.
func convert(value any, received bool) any {
	switch v := value.(type) {
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return int64(v)
		}
		if received {
			return int32(v)
		}
	case time.Time:
		if received {
			return time.Unix(v.Unix(), 0)
		}
	case []byte:
		if received {
			return bytes.Clone(v)
		}
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = convert(item, received)
		}
		return items
	case amqp.Table:
		return convertTable(v, received)
	case map[string]any:
		return convertTable(v, received)
	}
	return value
}

func convertTable(table map[string]any, received bool) amqp.Table {
	converted := make(amqp.Table, len(table))
	for name, item := range table {
		converted[name] = convert(item, received)
	}
	return converted
}
