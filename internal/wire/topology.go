package wire

import (
	"fmt"

	"github.com/warrenmq/messaging"
)

// StreamTopology is what a transport declares when a stream opens, and what
// topology.ForStream reports: with EstablishTopology the exchange of every
// binding (config.StreamBindings: a durable fanout per topic, a topic
// exchange for a binding that routes by key, others of their kinds), the
// source queue (messaging.DeclaredQueue: type, lifetime, arguments, the
// dead-letter arguments) and its bindings; with DeadLetters DeadLetterExchange
// and the classic durable {queue}.dlq and {queue}.parked bound to it on their
// own names. Exchanges come first, then queues, then bindings.
type StreamTopology struct {
	Exchanges []messaging.Exchange
	Queues    []messaging.Queue
	Bindings  []messaging.Binding
	// via[i] is the index in Exchanges of the declaration Bindings[i] needs.
	via []int
}

// TopologyOf returns the topology a stream of config declares.
func TopologyOf(config messaging.StreamConfig) (StreamTopology, error) {
	var t StreamTopology
	queue := config.StreamName
	if config.EstablishTopology {
		source, err := config.SourceQueue()
		if err == nil {
			source, err = messaging.DeclaredQueue(source)
		}
		if err != nil {
			return StreamTopology{}, err
		}
		for _, b := range config.StreamBindings() {
			x := messaging.Exchange{Name: b.Exchange, Kind: b.Kind, Durable: true}
			if err := x.Validate(); err != nil {
				return StreamTopology{}, fmt.Errorf("bind stream %q: %w", queue, err)
			}
			t.via = append(t.via, len(t.Exchanges))
			t.Exchanges = append(t.Exchanges, x)
			t.Bindings = append(t.Bindings, messaging.Binding{Exchange: b.Exchange, Queue: queue, Key: b.Key, Arguments: b.Arguments})
		}
		t.Queues = append(t.Queues, source)
	}
	if config.DeadLetters {
		dlx := len(t.Exchanges)
		t.Exchanges = append(t.Exchanges, messaging.Exchange{Name: DeadLetterExchange, Kind: messaging.ExchangeDirect, Durable: true})
		for _, name := range []string{DeadLetterQueue(queue), ParkedQueue(queue)} {
			t.Queues = append(t.Queues, messaging.Queue{Name: name, Durable: true})
			t.via = append(t.via, dlx)
			t.Bindings = append(t.Bindings, messaging.Binding{Exchange: DeadLetterExchange, Queue: name, Key: name})
		}
	}
	return t, nil
}

// StreamDeclarer is what a transport does for each step of a StreamTopology.
type StreamDeclarer interface {
	// Exchange declares x. When the broker refuses it as differing from what
	// exists, the transport uses what exists, warns in the broker's words
	// adding unbound (what is left unbound because of it), and returns false
	// with a nil error.
	Exchange(x messaging.Exchange, unbound string) (declared bool, err error)
	// Queue declares q, tolerating one that exists with other properties as
	// Exchange does.
	Queue(q messaging.Queue) error
	// Bind binds a queue to an exchange.
	Bind(b messaging.Binding) error
}

// Declare runs t's steps through d in order and returns the first error.
// Nothing is bound to an exchange whose declaration was refused: its name
// would mean something else there (a routing key on a fanout exchange).
func (t StreamTopology) Declare(d StreamDeclarer) error {
	declared := make([]bool, len(t.Exchanges))
	for i, x := range t.Exchanges {
		ok, err := d.Exchange(x, t.unbound(i))
		if err != nil {
			return err
		}
		declared[i] = ok
	}
	for _, q := range t.Queues {
		if err := d.Queue(q); err != nil {
			return err
		}
	}
	for i, b := range t.Bindings {
		if !declared[t.via[i]] {
			continue
		}
		if err := d.Bind(b); err != nil {
			return err
		}
	}
	return nil
}

// unbound says what a refused declaration of exchange i leaves unbound, for
// the warning that reports it.
func (t StreamTopology) unbound(i int) string {
	if t.Exchanges[i].Name == DeadLetterExchange {
		return ", and nothing is bound to it"
	}
	for j, b := range t.Bindings {
		if t.via[j] == i {
			return fmt.Sprintf(", and queue %q is not bound to it with key %q; bind it yourself if nothing routes the messages there", b.Queue, b.Key)
		}
	}
	return ""
}
