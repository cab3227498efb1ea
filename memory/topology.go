package memory

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/warrenmq/messaging/internal/wire"
)

// Exchange kinds the in-memory broker routes.
const (
	KindDirect  = "direct"
	KindTopic   = "topic"
	KindFanout  = "fanout"
	KindHeaders = "headers"
)

// QueueOptions are the properties a queue is declared with. Redeclaring a queue
// with different options fails with PRECONDITION_FAILED, as on RabbitMQ.
type QueueOptions struct {
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	// Arguments are the x- arguments. The broker interprets x-queue-type
	// ("quorum" must be durable, not exclusive, not auto-delete), x-message-ttl,
	// x-dead-letter-exchange and x-dead-letter-routing-key; it records the rest
	// and compares them on redeclare.
	Arguments map[string]any
}

type exchange struct {
	name       string
	kind       string
	durable    bool
	autoDelete bool
	arguments  map[string]any
	bindings   []binding
}

type binding struct {
	queue     string
	key       string
	arguments map[string]any
}

type queue struct {
	name     string
	options  QueueOptions
	owner    *connection // the connection an exclusive queue belongs to
	messages []*message
	streams  int  // open streams consuming the queue
	consumed bool // a stream has consumed it: auto-delete applies
	deleted  bool
	signal   // the queue's next change: a message pushed or requeued, the delete
}

func (q *queue) push(m *message) {
	q.messages = append(q.messages, m)
	q.notify()
}

// requeue puts messages back at the front of the queue, in the order given.
func (q *queue) requeue(messages []*message) {
	if len(messages) == 0 {
		return
	}
	for _, m := range messages {
		m.redelivered = true
	}
	q.messages = append(slices.Clone(messages), q.messages...)
	q.notify()
}

func (q *queue) pop() *message {
	if len(q.messages) == 0 {
		return nil
	}
	m := q.messages[0]
	q.messages[0] = nil
	q.messages = q.messages[1:]
	return m
}

var predeclared = []exchange{
	{name: "amq.direct", kind: KindDirect, durable: true},
	{name: "amq.fanout", kind: KindFanout, durable: true},
	{name: "amq.topic", kind: KindTopic, durable: true},
}

// declareExchangeLocked declares an exchange or checks an existing one.
func (b *Broker) declareExchangeLocked(name, kind string, durable bool) error {
	return b.declareExchangeWithLocked(exchange{name: name, kind: kind, durable: durable})
}

// declareExchangeWithLocked declares spec or checks that an existing exchange
// has its kind, durability, auto-delete and arguments.
func (b *Broker) declareExchangeWithLocked(spec exchange) error {
	name, kind := spec.name, spec.kind
	switch kind {
	case KindDirect, KindTopic, KindFanout, KindHeaders:
	default:
		return commandInvalid("unknown exchange type %q for exchange %q; use direct, topic, fanout or headers", kind, name)
	}
	if name == "" {
		return accessRefused("operation not permitted on the default exchange")
	}
	if existing, ok := b.exchanges[name]; ok {
		return inequivalent("exchange", name, []property{
			{"type", strconv.Quote(kind), strconv.Quote(existing.kind)},
			{"durable", spec.durable, existing.durable},
			{"auto_delete", spec.autoDelete, existing.autoDelete},
		}, existing.arguments, spec.arguments)
	}
	if strings.HasPrefix(name, "amq.") {
		return accessRefused("exchange name %q contains reserved prefix 'amq.*'", name)
	}
	spec.arguments = maps.Clone(spec.arguments)
	spec.bindings = nil
	b.exchanges[name] = &spec
	return nil
}

// differentArguments returns the first argument (by name) on which current
// and declared differ, as RabbitMQ compares them.
func differentArguments(current, declared map[string]any) (name string, was, now any, differ bool) {
	names := slices.Sorted(maps.Keys(current))
	for arg := range declared {
		if _, ok := current[arg]; !ok {
			names = append(names, arg)
		}
	}
	slices.Sort(names)
	for _, arg := range names {
		was, now := normalArgument(arg, current[arg]), normalArgument(arg, declared[arg])
		if !reflect.DeepEqual(was, now) {
			return arg, was, now, true
		}
	}
	return "", nil, nil, false
}

// declareQueueLocked declares a queue or checks an existing one; owner is the
// declaring connection (nil for the Broker's own helper).
func (b *Broker) declareQueueLocked(name string, options QueueOptions, owner *connection) error {
	if name == "" {
		return preconditionFailed("a queue needs a name; the in-memory broker does not generate them")
	}
	if existing, ok := b.queues[name]; ok {
		if existing.options.Exclusive && existing.owner != owner {
			return resourceLocked("cannot obtain exclusive access to locked queue %q; it is in use by another connection", name)
		}
		return equivalent(existing, options)
	}
	if strings.HasPrefix(name, "amq.") {
		return accessRefused("queue name %q contains reserved prefix 'amq.*'", name)
	}
	if err := validQueue(name, options); err != nil {
		return err
	}
	options.Arguments = maps.Clone(options.Arguments)
	q := &queue{name: name, options: options}
	if options.Exclusive {
		q.owner = owner
	}
	b.queues[name] = q
	return nil
}

func validQueue(name string, options QueueOptions) error {
	if kind := options.Arguments["x-queue-type"]; kind == "quorum" || kind == "stream" {
		switch {
		case !options.Durable:
			return preconditionFailed("invalid property 'non-durable' for queue %q: a %s queue is durable", name, kind)
		case options.Exclusive:
			return preconditionFailed("invalid property 'exclusive' for queue %q: a %s queue cannot be exclusive", name, kind)
		case options.AutoDelete:
			return preconditionFailed("invalid property 'auto-delete' for queue %q: a %s queue cannot auto-delete", name, kind)
		}
	}
	for _, arg := range []string{"x-message-ttl"} {
		if value, ok := options.Arguments[arg]; ok {
			if ms, ok := integer(value); !ok || ms < 0 {
				return preconditionFailed("invalid arg '%s' for queue %q: %v is not a non-negative integer of milliseconds", arg, name, value)
			}
		}
	}
	return nil
}

// equivalent checks a queue's redeclaration against the queue that exists.
func equivalent(existing *queue, options QueueOptions) error {
	current := existing.options
	return inequivalent("queue", existing.name, []property{
		{"durable", options.Durable, current.Durable},
		{"exclusive", options.Exclusive, current.Exclusive},
		{"auto_delete", options.AutoDelete, current.AutoDelete},
	}, current.Arguments, options.Arguments)
}

// property is one property of an exchange or queue as a redeclaration
// received it and as the existing one has it.
type property struct {
	arg               string
	received, current any
}

// inequivalent is RabbitMQ's answer to a redeclaration that differs from what
// exists: PRECONDITION_FAILED naming the first of properties that differs,
// else the first argument (differentArguments); nil when nothing differs.
func inequivalent(kind, name string, properties []property, current, declared map[string]any) error {
	for _, p := range properties {
		if p.received != p.current {
			return mismatch(kind, name, p.arg, p.received, p.current)
		}
	}
	if arg, was, now, differ := differentArguments(current, declared); differ {
		return mismatch(kind, name, arg, describe(now), describe(was))
	}
	return nil
}

func mismatch(kind, name, arg string, received, current any) error {
	return preconditionFailed("inequivalent arg '%s' for %s %q: received %v but current is %v", arg, kind, name, received, current)
}

// normalArgument makes equal what RabbitMQ treats as equal: integers of any
// width, and an x-queue-type of "classic" with no x-queue-type at all.
func normalArgument(name string, value any) any {
	if name == "x-queue-type" && value == "classic" {
		return nil
	}
	if n, ok := integer(value); ok {
		return n
	}
	return value
}

func describe(value any) string {
	if value == nil {
		return "none"
	}
	return fmt.Sprintf("'%v'", value)
}

// integer reads an integer argument of any width (wire.Whole), or one
// written as decimal text.
func integer(value any) (int64, bool) {
	if text, ok := value.(string); ok {
		n, err := strconv.ParseInt(text, 10, 64)
		return n, err == nil
	}
	return wire.Whole(value)
}

// queueTTL is the queue's x-message-ttl, or 0 and false.
func (q *queue) ttl() (time.Duration, bool) {
	value, ok := q.options.Arguments["x-message-ttl"]
	if !ok {
		return 0, false
	}
	ms, ok := integer(value)
	return time.Duration(ms) * time.Millisecond, ok
}

// bindLocked binds a queue to an exchange; by is the binding connection (nil
// for the Broker's own helper, which may bind any queue).
func (b *Broker) bindLocked(queueName, exchangeName, key string, by *connection) error {
	return b.bindWithLocked(queueName, exchangeName, key, nil, by)
}

// bindWithLocked is bindLocked with binding arguments (x-match and the
// headers a headers exchange matches on).
func (b *Broker) bindWithLocked(queueName, exchangeName, key string, arguments map[string]any, by *connection) error {
	if exchangeName == "" {
		return accessRefused("operation not permitted on the default exchange; it routes to the queue named by the routing key without bindings")
	}
	x, ok := b.exchanges[exchangeName]
	if !ok {
		return notFound("no exchange %q in vhost '/'; declare it before binding %q to it", exchangeName, queueName)
	}
	q, ok := b.queues[queueName]
	if !ok {
		return notFound("no queue %q in vhost '/'; declare it before binding it to %q", queueName, exchangeName)
	}
	if q.options.Exclusive && q.owner != nil && by != nil && q.owner != by {
		return resourceLocked("cannot obtain exclusive access to locked queue %q; it is in use by another connection", queueName)
	}
	for _, existing := range x.bindings {
		if existing.queue == queueName && existing.key == key {
			if _, _, _, differ := differentArguments(existing.arguments, arguments); !differ {
				return nil
			}
		}
	}
	x.bindings = append(x.bindings, binding{queue: queueName, key: key, arguments: maps.Clone(arguments)})
	return nil
}

// route returns the queues a message published to x with key and headers
// reaches, each once.
func (b *Broker) route(x *exchange, key string, headers map[string]any) []*queue {
	var targets []*queue
	seen := map[string]bool{}
	for _, bound := range x.bindings {
		if seen[bound.queue] {
			continue
		}
		var matches bool
		switch x.kind {
		case KindFanout:
			matches = true
		case KindDirect:
			matches = bound.key == key
		case KindTopic:
			matches = topicMatches(bound.key, key)
		case KindHeaders:
			matches = headersMatch(bound.arguments, headers)
		}
		if q, ok := b.queues[bound.queue]; ok && matches {
			seen[bound.queue] = true
			targets = append(targets, q)
		}
	}
	return targets
}

// deleteQueueLocked removes a queue, its messages and its bindings.
func (b *Broker) deleteQueueLocked(q *queue) {
	delete(b.queues, q.name)
	q.deleted = true
	q.messages = nil
	for name, x := range b.exchanges {
		had := len(x.bindings)
		x.bindings = slices.DeleteFunc(x.bindings, func(bound binding) bool { return bound.queue == q.name })
		if x.autoDelete && had > 0 && len(x.bindings) == 0 {
			delete(b.exchanges, name) // an auto-delete exchange goes with its last binding
		}
	}
	q.notify()
}

// headersMatch applies a headers exchange's binding: with x-match "any" one
// of the binding's other arguments must equal the message's header of that
// name, otherwise ("all", the default) every one must. Arguments starting with
// x- other than x-match are ignored, as on RabbitMQ.
func headersMatch(arguments, headers map[string]any) bool {
	matchAny := arguments["x-match"] == "any" || arguments["x-match"] == "any-with-x"
	for name, want := range arguments {
		if strings.HasPrefix(name, "x-") {
			continue
		}
		got, ok := headers[name]
		equal := ok && (want == nil || reflect.DeepEqual(normalArgument(name, want), normalArgument(name, got)))
		if matchAny && equal {
			return true
		}
		if !matchAny && !equal {
			return false
		}
	}
	return !matchAny
}
