package schedule

import (
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/topology"
)

// The names of the scheduler's topology: a cross-language contract that every
// AceMQ library declares alike, byte for byte.
const (
	// Exchange is the durable direct exchange every rung is bound to under
	// its own name, and the one expired messages are dead-lettered through.
	Exchange = "acemq.schedule"
	// DueQueue is where a rung's expired messages land: the control queue
	// the scheduler consumes, bound to Exchange under its own name.
	DueQueue = "acemq.schedule.due"
)

// The four headers a scheduled message carries between rungs. They are not
// in the reserved x-acemq- namespace, whose headers are removed on consume,
// and none of them is passed on to the destination.
const (
	// HeaderExchange is the destination exchange ("" is the default one).
	HeaderExchange = "x-schedule-exchange"
	// HeaderRoutingKey is the destination routing key.
	HeaderRoutingKey = "x-schedule-routing-key"
	// HeaderDueAt is when the message is due, in Unix milliseconds (an integer).
	HeaderDueAt = "x-schedule-due-at"
	// HeaderContentType is the payload's content type, restored on delivery.
	HeaderContentType = "x-schedule-content-type"
)

// Envelope values of the wire contract.
const (
	// MessageType is the envelope type of a scheduled message, between rungs
	// and on delivery.
	MessageType = "ScheduledMessage"
	// BytesContentType is the content type between rungs, where the payload
	// is opaque bytes.
	BytesContentType = "application/octet-stream"
	// DefaultContentType is the delivered content type when the message
	// carries none.
	DefaultContentType = "application/json"
)

// ladder is the rungs' TTLs, longest first.
var ladder = []time.Duration{time.Hour, 10 * time.Minute, time.Minute, 10 * time.Second, time.Second}

// smallest is the shortest rung: a message with less than this left is
// delivered rather than put on a rung, so delivery is accurate to about it.
const smallest = time.Second

// reconnectDelay is the control consumer's first pause before it opens its
// stream again after losing it: a scheduler is only as accurate as it is
// quick to come back.
const reconnectDelay = 100 * time.Millisecond

// loopRung is the rung a due message that reached no queue waits on before
// it is tried again.
const loopRung = 10 * time.Second

// Rung is one queue of the ladder: every message in it waits TTL, then is
// dead-lettered through Exchange to DueQueue.
type Rung struct {
	Name string
	TTL  time.Duration
}

// Arguments are the rung's declaration arguments, exactly three
// (RungArguments).
func (r Rung) Arguments() map[string]any { return RungArguments(r.TTL) }

// Rungs is the ladder, longest first: acemq.schedule.1h, .10m, .1m, .10s
// and .1s.
func Rungs() []Rung {
	rungs := make([]Rung, len(ladder))
	for i, ttl := range ladder {
		rungs[i] = Rung{Name: RungName(ttl), TTL: ttl}
	}
	return rungs
}

// RungName names the rung of ttl: acemq.schedule.{d}, with d written as the
// retry ladder writes it (retrypolicy.DelayName: Nh, Nm or Ns).
func RungName(ttl time.Duration) string {
	return Exchange + "." + retrypolicy.DelayName(ttl)
}

// RungArguments are a rung's declaration arguments, exactly these three:
// x-message-ttl (ttl in milliseconds, an int64), x-dead-letter-exchange
// Exchange and x-dead-letter-routing-key DueQueue; no x-queue-type, so the
// rung is classic. Any other table is refused by the broker with
// PRECONDITION_FAILED once another library declared the rung.
func RungArguments(ttl time.Duration) map[string]any {
	return map[string]any{
		"x-message-ttl":             ttl.Milliseconds(),
		"x-dead-letter-exchange":    Exchange,
		"x-dead-letter-routing-key": DueQueue,
	}
}

// Topology is the scheduler's whole topology, as every AceMQ library
// declares it: Exchange (durable, direct), the five rungs (classic, durable,
// the three arguments, each bound to Exchange under its own name) and
// DueQueue (classic, durable, no arguments, bound under its own name). Print
// it, Apply it ahead of deployment, or Check it against a broker. New
// applies it; the control consumer also declares acemq.schedule.due.dlq and
// .parked, which the other libraries do not (see the package doc).
func Topology() topology.Plan {
	p := topology.Plan{
		Exchanges: []messaging.Exchange{{Name: Exchange, Kind: messaging.ExchangeDirect, Durable: true}},
	}
	for _, r := range Rungs() {
		p.Queues = append(p.Queues, messaging.Queue{Name: r.Name, Durable: true, Arguments: r.Arguments()})
		p.Bindings = append(p.Bindings, messaging.Binding{Exchange: Exchange, Queue: r.Name, Key: r.Name})
	}
	p.Queues = append(p.Queues, messaging.Queue{Name: DueQueue, Durable: true})
	p.Bindings = append(p.Bindings, messaging.Binding{Exchange: Exchange, Queue: DueQueue, Key: DueQueue})
	return p
}

// rungsFor lists the rungs that may hold a message with remaining left, in
// the order to try them: the largest that does not overshoot first, then the
// shorter ones (used when a longer one is missing). It is empty when less
// than the smallest rung is left: then the message is delivered.
func rungsFor(remaining time.Duration) []Rung {
	var rungs []Rung
	for _, r := range Rungs() {
		if r.TTL <= remaining {
			rungs = append(rungs, r)
		}
	}
	return rungs
}
