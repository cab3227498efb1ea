// Package topology is a declared plan of exchanges, queues and bindings: built
// from the streams a service consumes (or by hand, by the scheduler and the
// pipelines), validated before a broker is asked, applied through a
// messaging.Declarer, printed for a reader, and checked against a live broker
// (what is missing, what differs, in the broker's own words).
package topology

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// Names of the settlement topology every AceMQ library declares.
const (
	DeadLetterExchange = wire.DeadLetterExchange
	DeadLetterSuffix   = wire.DeadLetterSuffix
	ParkedSuffix       = wire.ParkedSuffix
)

// Plan is topology to declare: exchanges, then queues, then bindings.
type Plan struct {
	Exchanges []messaging.Exchange
	Queues    []messaging.Queue
	Bindings  []messaging.Binding
}

// ForStream is the plan a stream of config declares, exactly as the
// transports declare it (see doc/topology.md): with EstablishTopology the
// exchange of every binding, the source queue and the bindings; with
// DeadLetters acemq.dlx and the classic durable {queue}.dlq and
// {queue}.parked.
func ForStream(config messaging.StreamConfig) (Plan, error) {
	if config.StreamName == "" {
		return Plan{}, errors.New("topology: the stream config names no queue; set StreamName")
	}
	steps, err := wire.TopologyOf(config)
	if err != nil {
		return Plan{}, fmt.Errorf("topology: %w", err)
	}
	return Plan{Exchanges: steps.Exchanges, Queues: steps.Queues, Bindings: steps.Bindings}, nil
}

// Merge returns p with the declarations of others added. An exchange or queue
// declared alike twice appears once; declared differently, Validate refuses it.
func (p Plan) Merge(others ...Plan) Plan {
	merged := Plan{
		Exchanges: slices.Clone(p.Exchanges),
		Queues:    slices.Clone(p.Queues),
		Bindings:  slices.Clone(p.Bindings),
	}
	for _, o := range others {
		for _, x := range o.Exchanges {
			if !slices.ContainsFunc(merged.Exchanges, func(y messaging.Exchange) bool { return sameExchange(x, y) }) {
				merged.Exchanges = append(merged.Exchanges, x)
			}
		}
		for _, q := range o.Queues {
			if !slices.ContainsFunc(merged.Queues, func(y messaging.Queue) bool { return sameQueue(q, y) }) {
				merged.Queues = append(merged.Queues, q)
			}
		}
		for _, b := range o.Bindings {
			if !slices.ContainsFunc(merged.Bindings, func(y messaging.Binding) bool { return sameBinding(b, y) }) {
				merged.Bindings = append(merged.Bindings, b)
			}
		}
	}
	return merged
}

func sameExchange(a, b messaging.Exchange) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Durable == b.Durable && a.AutoDelete == b.AutoDelete && maps.EqualFunc(a.Arguments, b.Arguments, equalValue)
}

// sameQueue compares two queues as they are declared (messaging.DeclaredQueue).
func sameQueue(a, b messaging.Queue) bool {
	a, b = declared(a), declared(b)
	return a.Name == b.Name && a.Type == b.Type && a.Durable == b.Durable && a.Exclusive == b.Exclusive && a.AutoDelete == b.AutoDelete && maps.EqualFunc(a.Arguments, b.Arguments, equalValue)
}

// declared is q as a transport declares it, or q itself when it is invalid
// (Validate says why).
func declared(q messaging.Queue) messaging.Queue {
	if d, err := messaging.DeclaredQueue(q); err == nil {
		return d
	}
	return q
}

func sameBinding(a, b messaging.Binding) bool {
	return a.Exchange == b.Exchange && a.Queue == b.Queue && a.Key == b.Key && maps.EqualFunc(a.Arguments, b.Arguments, equalValue)
}

func equalValue(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Validate reports every mistake in p that a broker would refuse or that would
// silently route nothing: an exchange without a known kind, a duplicate
// exchange or queue declared differently, a queue type stated twice, a stream
// queue said to be exclusive or auto-delete (a stream is always durable,
// shared and kept; a stream's Durable may be left false), a binding to the
// default exchange, or to an exchange or queue the plan does not declare.
func (p Plan) Validate() error {
	var errs []error
	exchanges := map[string]messaging.Exchange{}
	for _, x := range p.Exchanges {
		if err := x.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen, ok := exchanges[x.Name]; ok && !sameExchange(seen, x) {
			errs = append(errs, fmt.Errorf("exchange %q is declared twice, differently", x.Name))
		}
		exchanges[x.Name] = x
	}
	queues := map[string]messaging.Queue{}
	for _, q := range p.Queues {
		if q.Name == "" {
			errs = append(errs, errors.New("a queue has no name"))
			continue
		}
		if d, err := messaging.DeclaredQueue(q); err != nil {
			errs = append(errs, err)
		} else if d.Exclusive != q.Exclusive || d.AutoDelete != q.AutoDelete {
			errs = append(errs, fmt.Errorf("queue %q is a stream, and also %s: a stream is kept for every consumer until its retention discards it, so it cannot be exclusive or auto-delete; drop those, or declare a classic queue", q.Name, strings.Join(lifetime(true, q.Exclusive, q.AutoDelete)[1:], " and ")))
		}
		if seen, ok := queues[q.Name]; ok && !sameQueue(seen, q) {
			errs = append(errs, fmt.Errorf("queue %q is declared twice, differently", q.Name))
		}
		queues[q.Name] = q
	}
	for _, b := range p.Bindings {
		switch {
		case b.Exchange == "":
			errs = append(errs, fmt.Errorf("binding %s: the default exchange cannot be bound to", describeBinding(b)))
		case !hasKey(exchanges, b.Exchange):
			errs = append(errs, fmt.Errorf("binding %s names exchange %q, which this plan does not declare", describeBinding(b), b.Exchange))
		}
		if !hasKey(queues, b.Queue) {
			errs = append(errs, fmt.Errorf("binding %s names queue %q, which this plan does not declare", describeBinding(b), b.Queue))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("topology: the plan is invalid: %w", errors.Join(errs...))
	}
	return nil
}

func hasKey[V any](m map[string]V, key string) bool {
	_, ok := m[key]
	return ok
}

// Apply validates p and declares it through d: exchanges, then queues, then
// bindings. It stops at the first refusal, which names what was refused.
func (p Plan) Apply(ctx context.Context, d messaging.Declarer) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for _, x := range p.Exchanges {
		if err := d.DeclareExchange(ctx, x); err != nil {
			return fmt.Errorf("topology: %s: %w", describeExchange(x), err)
		}
	}
	for _, q := range p.Queues {
		if err := d.DeclareQueue(ctx, q); err != nil {
			return fmt.Errorf("topology: %s: %w", describeQueue(q), err)
		}
	}
	for _, b := range p.Bindings {
		if err := d.Bind(ctx, b); err != nil {
			return fmt.Errorf("topology: bind %s: %w", describeBinding(b), err)
		}
	}
	return nil
}

// String is the plan in words, one line per declaration:
//
//	declare exchange orders (topic, durable)
//	declare queue orders.new (quorum, durable, x-dead-letter-exchange=acemq.dlx, ...)
//	bind orders -> orders.new (order.*)
func (p Plan) String() string {
	var b strings.Builder
	for _, x := range p.Exchanges {
		fmt.Fprintln(&b, describeExchange(x))
	}
	for _, q := range p.Queues {
		fmt.Fprintln(&b, describeQueue(q))
	}
	for _, binding := range p.Bindings {
		fmt.Fprintln(&b, "bind "+describeBinding(binding))
	}
	return b.String()
}

func describeExchange(x messaging.Exchange) string {
	words := []string{string(x.Kind)}
	words = append(words, lifetime(x.Durable, false, x.AutoDelete)...)
	return fmt.Sprintf("declare exchange %s (%s)", x.Name, strings.Join(append(words, arguments(x.Arguments)...), ", "))
}

func describeQueue(q messaging.Queue) string {
	q = declared(q)
	kind := q.Type
	if kind == "" {
		kind = messaging.QueueClassic
		if t, ok := q.Arguments[messaging.QueueTypeArgument].(string); ok {
			kind = messaging.QueueType(t)
		}
	}
	words := append([]string{string(kind)}, lifetime(q.Durable, q.Exclusive, q.AutoDelete)...)
	rest := maps.Clone(q.Arguments)
	delete(rest, messaging.QueueTypeArgument)
	return fmt.Sprintf("declare queue %s (%s)", q.Name, strings.Join(append(words, arguments(rest)...), ", "))
}

func describeBinding(b messaging.Binding) string {
	key := b.Key
	if key == "" {
		key = `""`
	}
	words := append([]string{key}, arguments(b.Arguments)...)
	return fmt.Sprintf("%s -> %s (%s)", b.Exchange, b.Queue, strings.Join(words, ", "))
}

func lifetime(durable, exclusive, autoDelete bool) []string {
	words := []string{"transient"}
	if durable {
		words[0] = "durable"
	}
	if exclusive {
		words = append(words, "exclusive")
	}
	if autoDelete {
		words = append(words, "auto-delete")
	}
	return words
}

func arguments(args map[string]any) []string {
	words := make([]string, 0, len(args))
	for _, name := range slices.Sorted(maps.Keys(args)) {
		words = append(words, fmt.Sprintf("%s=%v", name, args[name]))
	}
	return words
}
