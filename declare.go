package messaging

import (
	"context"
	"fmt"
)

// ExchangeKind is how an exchange routes: by exact key, by topic pattern, to
// every bound queue, or by headers.
type ExchangeKind string

// The exchange kinds every transport declares.
const (
	ExchangeDirect  ExchangeKind = "direct"
	ExchangeTopic   ExchangeKind = "topic"
	ExchangeFanout  ExchangeKind = "fanout"
	ExchangeHeaders ExchangeKind = "headers"
)

// QueueType is a queue's storage type. Classic is the broker's default and is
// declared without an x-queue-type argument, as every AceMQ library declares it.
type QueueType string

// The queue types a transport declares.
const (
	QueueClassic QueueType = "classic"
	QueueQuorum  QueueType = "quorum"
	QueueStream  QueueType = "stream"
)

// QueueTypeArgument is the queue argument that carries a QueueType.
const QueueTypeArgument = "x-queue-type"

// Exchange is an exchange to declare.
type Exchange struct {
	Name       string
	Kind       ExchangeKind
	Durable    bool
	AutoDelete bool
	// Arguments are the exchange's x- arguments (alternate-exchange, ...).
	Arguments map[string]any
}

// Queue is a queue to declare.
type Queue struct {
	Name string
	// Type is classic when empty. A quorum queue must be durable, not
	// exclusive and not auto-delete; the broker refuses it otherwise. A stream
	// queue is always declared so, whatever the flags say (DeclaredQueue).
	Type       QueueType
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	// Arguments are the queue's x- arguments (x-message-ttl,
	// x-dead-letter-exchange, ...). An x-queue-type here must agree with Type.
	Arguments map[string]any
}

// Binding routes what Exchange receives under Key (a topic pattern for a
// topic exchange, ignored by fanout) to Queue.
type Binding struct {
	Exchange  string
	Queue     string
	Key       string
	Arguments map[string]any
}

// StreamBinding binds a stream's queue to an exchange of a kind, declared
// durable when missing, under a key (a topic pattern on a topic exchange).
type StreamBinding struct {
	Exchange string
	// Kind is the exchange's kind; empty means fanout, as Topics declare.
	Kind      ExchangeKind
	Key       string
	Arguments map[string]any
}

// QueueState is what a passive inspection of a queue reports.
type QueueState struct {
	Name string
	// Messages is how many messages are ready for delivery.
	Messages int
	// Consumers is how many consumers the queue has.
	Consumers int
}

// Declarer declares and inspects topology on a transport. A Connection that
// can do so implements it; find it through decorators with As. Every call is
// bounded by the transport's broker timeout, and a refusal is a *BrokerError:
// redeclaring with different properties matches ErrPreconditionFailed, a
// missing exchange or queue ErrNotFound, another connection's exclusive queue
// ErrResourceLocked, a reserved name or the default exchange ErrAccessRefused.
type Declarer interface {
	// DeclareExchange declares an exchange, or checks that one with the same
	// properties exists.
	DeclareExchange(ctx context.Context, exchange Exchange) error
	// DeclareQueue declares a queue, or checks that one with the same
	// properties exists. An exclusive queue belongs to this connection and is
	// deleted with it.
	DeclareQueue(ctx context.Context, queue Queue) error
	// Bind binds a declared queue to a declared exchange.
	Bind(ctx context.Context, binding Binding) error
	// DeleteQueue deletes a queue, its messages and its bindings. Deleting a
	// queue that does not exist succeeds.
	DeleteQueue(ctx context.Context, name string) error
	// DeleteExchange deletes an exchange and its bindings. Deleting one that
	// does not exist succeeds.
	DeleteExchange(ctx context.Context, name string) error
	// InspectQueue reports a queue's ready messages and consumers without
	// declaring it; a queue that does not exist matches ErrNotFound.
	InspectQueue(ctx context.Context, name string) (QueueState, error)
	// InspectExchange checks that an exchange exists without declaring it; one
	// that does not matches ErrNotFound. (AMQP cannot report its kind.)
	InspectExchange(ctx context.Context, name string) error
}

// QueueArguments returns the arguments a transport declares q with: q's own,
// plus x-queue-type for a quorum or stream Type (classic sends none). It
// fails when q's Arguments carry an x-queue-type that disagrees with Type.
func QueueArguments(q Queue) (map[string]any, error) {
	declared, has := q.Arguments[QueueTypeArgument]
	switch {
	case q.Type == "" || q.Type == QueueClassic:
		if has && declared != string(QueueClassic) && q.Type == QueueClassic {
			return nil, fmt.Errorf("queue %q: Type is classic but Arguments say %s=%v; state the type once", q.Name, QueueTypeArgument, declared)
		}
		if has && declared == string(QueueClassic) {
			args := make(map[string]any, len(q.Arguments))
			for k, v := range q.Arguments {
				if k != QueueTypeArgument {
					args[k] = v
				}
			}
			return args, nil
		}
		return q.Arguments, nil
	case q.Type == QueueQuorum || q.Type == QueueStream:
		if has && declared != string(q.Type) {
			return nil, fmt.Errorf("queue %q: Type is %s but Arguments say %s=%v; state the type once", q.Name, q.Type, QueueTypeArgument, declared)
		}
		args := make(map[string]any, len(q.Arguments)+1)
		for k, v := range q.Arguments {
			args[k] = v
		}
		args[QueueTypeArgument] = string(q.Type)
		return args, nil
	}
	return nil, fmt.Errorf("queue %q: unknown queue type %q; use classic, quorum or stream", q.Name, q.Type)
}

// DeclaredQueue returns q as every transport declares it, the one rule the
// transports and topology plans share: its Arguments carry the x-queue-type
// of Type (see QueueArguments), and a stream queue (Type stream, or
// x-queue-type=stream among the Arguments) is durable and neither exclusive
// nor auto-delete whatever q says, because RabbitMQ refuses a stream that is
// any of those with an error that does not mention streams. It fails as
// QueueArguments does; q's map is not changed.
func DeclaredQueue(q Queue) (Queue, error) {
	arguments, err := QueueArguments(q)
	if err != nil {
		return Queue{}, err
	}
	q.Arguments = arguments
	if arguments[QueueTypeArgument] == string(QueueStream) {
		q.Durable, q.Exclusive, q.AutoDelete = true, false, false
	}
	return q, nil
}

// Validate reports what the kind of x is missing or wrong, before a broker is asked.
func (x Exchange) Validate() error {
	switch x.Kind {
	case ExchangeDirect, ExchangeTopic, ExchangeFanout, ExchangeHeaders:
	case "":
		return fmt.Errorf("exchange %q has no kind; use direct, topic, fanout or headers", x.Name)
	default:
		return fmt.Errorf("exchange %q: unknown kind %q; use direct, topic, fanout or headers", x.Name, x.Kind)
	}
	if x.Name == "" {
		return fmt.Errorf("an exchange of kind %s has no name; the default exchange cannot be declared", x.Kind)
	}
	return nil
}
