package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
)

// State is what a check found for one declaration.
type State string

// The states a check reports.
const (
	// Present: it exists as the plan declares it.
	Present State = "ok"
	// Missing: it does not exist.
	Missing State = "missing"
	// Differs: it exists with other properties; Detail has the broker's words.
	Differs State = "differs"
	// Unknown: the broker cannot say (AMQP cannot inspect a binding; another
	// connection's exclusive queue cannot be examined).
	Unknown State = "unknown"
)

// Finding is the check of one declaration of a plan.
type Finding struct {
	// What is "exchange", "queue" or "binding".
	What string
	// Name is the exchange or queue name, or "exchange -> queue (key)".
	Name   string
	State  State
	Detail string
}

// Report is the check of a plan, one finding per declaration in plan order.
type Report []Finding

// Healthy reports whether nothing is missing or differs.
func (r Report) Healthy() bool {
	for _, f := range r {
		if f.State == Missing || f.State == Differs {
			return false
		}
	}
	return true
}

// String is the report, one line per finding: "ok       queue orders.new".
func (r Report) String() string {
	var b strings.Builder
	for _, f := range r {
		fmt.Fprintf(&b, "%-8s %-8s %s", f.State, f.What, f.Name)
		if f.Detail != "" {
			fmt.Fprintf(&b, ": %s", f.Detail)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Check compares p with the broker behind d without creating anything that
// is missing: an exchange or queue that exists is redeclared as the plan
// declares it, which changes nothing when it is alike and is refused with
// the broker's words (PRECONDITION_FAILED) when it differs. Bindings cannot be
// inspected over AMQP: one whose exchange or queue is missing is missing, any
// other is unknown. An error is returned only when the broker could not be
// asked (a lost connection, a timeout).
func (p Plan) Check(ctx context.Context, d messaging.Declarer) (Report, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := checking{missing: map[string]bool{}}
	for _, x := range p.Exchanges {
		inspect := func() error { return d.InspectExchange(ctx, x.Name) }
		if err := c.check("exchange", x.Name, inspect, func() error { return d.DeclareExchange(ctx, x) }); err != nil {
			return c.report, err
		}
	}
	for _, q := range p.Queues {
		inspect := func() error { _, err := d.InspectQueue(ctx, q.Name); return err }
		if err := c.check("queue", q.Name, inspect, func() error { return d.DeclareQueue(ctx, q) }); err != nil {
			return c.report, err
		}
	}
	report, missing := c.report, c.missing
	for _, b := range p.Bindings {
		f := Finding{What: "binding", Name: fmt.Sprintf("%s -> %s (%s)", b.Exchange, b.Queue, b.Key), State: Unknown,
			Detail: "AMQP cannot inspect a binding; apply the plan to be sure it exists"}
		switch {
		case missing["exchange "+b.Exchange]:
			f.State, f.Detail = Missing, fmt.Sprintf("exchange %q is missing", b.Exchange)
		case missing["queue "+b.Queue]:
			f.State, f.Detail = Missing, fmt.Sprintf("queue %q is missing", b.Queue)
		}
		report = append(report, f)
	}
	return report, nil
}

// checking is a Check under way: the findings so far, and which exchanges and
// queues ("exchange x", "queue q") were found missing.
type checking struct {
	report  Report
	missing map[string]bool
}

// check finds one exchange or queue: inspect says whether it exists, and one
// that does is declared again, so the broker compares its properties with the
// plan's.
func (c *checking) check(what, name string, inspect, declare func() error) error {
	f := Finding{What: what, Name: name}
	err := inspect()
	if err == nil {
		err = declare()
	}
	if f.State, f.Detail, err = judge(err); err != nil {
		return fmt.Errorf("topology: check %s %q: %w", what, name, err)
	}
	c.missing[what+" "+name] = f.State == Missing
	c.report = append(c.report, f)
	return nil
}

// judge reads one inspection: nil is present, NOT_FOUND missing,
// PRECONDITION_FAILED a difference in the broker's words, RESOURCE_LOCKED
// unknown; anything else is the broker not answering.
func judge(err error) (State, string, error) {
	var refused *messaging.BrokerError
	errors.As(err, &refused)
	switch {
	case err == nil:
		return Present, "", nil
	case errors.Is(err, messaging.ErrNotFound):
		return Missing, "", nil
	case errors.Is(err, messaging.ErrPreconditionFailed) && refused != nil:
		return Differs, refused.Text, nil
	case errors.Is(err, messaging.ErrResourceLocked):
		return Unknown, "it is exclusive to another connection", nil
	}
	return "", "", err
}
