package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// HeaderRoutingSlip is the application header that carries a routing slip in
// its JSON form. It is deliberately outside the reserved x-acemq- namespace,
// so it reaches handlers in every AceMQ library.
const HeaderRoutingSlip = "acemq-routing-slip"

// ErrNoSteps is what Start returns for a slip with nothing on it.
var ErrNoSteps = errors.New("acemq: this routing slip has no steps in it")

// ErrUnreadableSlip marks a routing slip header that is not text or not the
// JSON the wire contract describes; its text, "cannot read the routing
// slip", is the family's. A message that carries one is dead-lettered: no
// retry can fix it.
var ErrUnreadableSlip = errors.New("acemq: cannot read the routing slip")

// stepName is the wire contract's rule for a step name, which is also a
// routing key and part of a queue name.
var stepName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.\-]*$`)

// Form is how a slip travels: the JSON header or the declared route headers.
type Form int

const (
	// FormJSON is the acemq-routing-slip header: every stop names its own
	// exchange and routing key. Go, Python and Ruby write it.
	FormJSON Form = iota
	// FormSteps is the declared route: x-acemq-route (the step names,
	// done and remaining), x-acemq-route-position (how many are done) and
	// x-acemq-route-id (the run). The exchange is the route's name and the
	// key the step's; Java writes it.
	FormSteps
)

// String names the form.
func (f Form) String() string {
	if f == FormSteps {
		return "steps"
	}
	return "json"
}

// Stop is one address on a slip: where the message goes for a step.
type Stop struct {
	// Exchange is the exchange to publish to; empty is the default exchange.
	Exchange string `json:"exchange"`
	// RoutingKey is the key to publish under.
	RoutingKey string `json:"routingKey"`
	// Name names the step; it may be empty in the JSON form.
	Name string `json:"name,omitempty"`
	// CompletedAt is when the step was done; zero on the stops still ahead.
	CompletedAt time.Time `json:"-"`
}

// label is the stop's name, or its address when it has none.
func (s Stop) label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Exchange + "/" + s.RoutingKey
}

// Slip is a routing slip: the stops a message still has to visit, in order,
// and those it visited. Build one with NewRoutingSlip or Route.Start, read one
// from a delivery with ReadSlip. A Slip is a value a handler owns. Then,
// AsSteps and AsJSON change it and return it for chaining; Advance returns a
// new slip and leaves the one it is called on as it was.
type Slip struct {
	steps []Stop
	done  []Stop
	form  Form
	// route and runID belong to the steps form.
	route string
	runID string
}

// NewRoutingSlip returns an empty slip in the JSON form; add stops with Then.
func NewRoutingSlip() *Slip { return &Slip{} }

// Then appends a stop: publish to exchange under routingKey; name is
// optional and only reported.
func (s *Slip) Then(exchange, routingKey, name string) *Slip {
	s.steps = append(s.steps, Stop{Exchange: exchange, RoutingKey: routingKey, Name: name})
	return s
}

// Form reports how the slip travels.
func (s *Slip) Form() Form { return s.form }

// RunID is the run id of a steps-form slip; the JSON form has none.
func (s *Slip) RunID() string { return s.runID }

// Remaining returns the stops still ahead, the next first.
func (s *Slip) Remaining() []Stop { return slices.Clone(s.steps) }

// Done returns the stops visited, oldest first.
func (s *Slip) Done() []Stop { return slices.Clone(s.done) }

// Next returns the stop the message is for, and false when none remains.
func (s *Slip) Next() (Stop, bool) {
	if len(s.steps) == 0 {
		return Stop{}, false
	}
	return s.steps[0], true
}

// Advance returns a copy of the slip with its next stop marked done at now,
// in UTC and whole seconds as the wire carries it; the slip it is called on
// is left as it was, as the family's slips are. A slip with no stop left is
// copied as it is.
func (s *Slip) Advance(now time.Time) *Slip {
	advanced := *s
	advanced.steps, advanced.done = slices.Clone(s.steps), slices.Clone(s.done)
	if len(advanced.steps) == 0 {
		return &advanced
	}
	stop := advanced.steps[0]
	stop.CompletedAt = now.UTC().Truncate(time.Second)
	advanced.done = append(advanced.done, stop)
	advanced.steps = slices.Delete(advanced.steps, 0, 1)
	return &advanced
}

// AsSteps switches the slip to the declared route form of route: every stop
// is addressed as route's exchange and the stop's name as the key, so every
// stop needs a name. It generates a run id when the slip has none.
func (s *Slip) AsSteps(route Route) *Slip {
	s.form = FormSteps
	s.route = route.Name
	if s.runID == "" {
		s.runID = messaging.NewID()
	}
	readdress := func(stops []Stop) {
		for i := range stops {
			stops[i].Exchange, stops[i].RoutingKey = route.Name, stops[i].Name
		}
	}
	readdress(s.steps)
	readdress(s.done)
	return s
}

// AsJSON switches the slip to the JSON form; the stops keep their addresses.
func (s *Slip) AsJSON() *Slip {
	s.form = FormJSON
	return s
}

// String describes the slip: its form and the step names, the next marked.
func (s *Slip) String() string {
	names := make([]string, 0, len(s.done)+len(s.steps))
	for _, stop := range s.done {
		names = append(names, stop.label())
	}
	for i, stop := range s.steps {
		if i == 0 {
			names = append(names, "["+stop.label()+"]")
		} else {
			names = append(names, stop.label())
		}
	}
	return s.form.String() + ": " + strings.Join(names, ",")
}

// Route is a declared pipeline route, Java's form of a slip: a name that is
// also the exchange, and step names that are also the routing keys and name
// the queues {name}.{step}.
type Route struct {
	Name  string
	Steps []string
}

// NewRoute returns the route name through steps.
func NewRoute(name string, steps ...string) Route {
	return Route{Name: name, Steps: slices.Clone(steps)}
}

// QueueFor is the queue of step on the route: {name}.{step}.
func (r Route) QueueFor(step string) string { return r.Name + "." + step }

// Start returns a steps-form slip at the route's first step with a fresh run id.
func (r Route) Start() *Slip {
	s := &Slip{form: FormSteps, route: r.Name, runID: messaging.NewID()}
	for _, step := range r.Steps {
		s.steps = append(s.steps, Stop{Exchange: r.Name, RoutingKey: step, Name: step})
	}
	return s
}

// Apply writes the slip onto d in its form and addresses d to the next stop:
// the JSON header (other application headers kept, d's map not changed), or
// d.Route, RoutePosition and RouteID. A slip with no stop left leaves d's
// address as it is.
func (s *Slip) Apply(d *messaging.Dispatch) error {
	if next, ok := s.Next(); ok {
		d.Topic, d.RoutingKey = next.Exchange, next.RoutingKey
	}
	headers := make(map[string]any, len(d.Headers)+1)
	for name, value := range d.Headers {
		if name != HeaderRoutingSlip {
			headers[name] = value
		}
	}
	if s.form == FormSteps {
		d.Route = make([]string, 0, len(s.done)+len(s.steps))
		for _, stop := range append(slices.Clone(s.done), s.steps...) {
			if stop.Name == "" {
				return fmt.Errorf("acemq: a stop to %s has no name, and a declared route is made of step names; name every stop", stop.label())
			}
			d.Route = append(d.Route, stop.Name)
		}
		d.RoutePosition = len(s.done)
		d.RouteID = s.runID
	} else {
		encoded, err := s.MarshalJSON()
		if err != nil {
			return err
		}
		headers[HeaderRoutingSlip] = string(encoded)
		d.Route, d.RoutePosition, d.RouteID = nil, 0, ""
	}
	if len(headers) == 0 {
		headers = nil
	}
	d.Headers = headers
	return nil
}

// jsonStop is a stop as the JSON form writes it: name and completedAt
// omitted when empty, completedAt in RFC 3339 UTC, whole seconds
// (2026-01-01T10:11:12Z) as every library of the family writes it.
type jsonStop struct {
	Exchange    string `json:"exchange"`
	RoutingKey  string `json:"routingKey"`
	Name        string `json:"name,omitempty"`
	CompletedAt string `json:"completedAt,omitempty"`
}

type jsonSlip struct {
	Steps []jsonStop `json:"steps"`
	Done  []jsonStop `json:"done,omitempty"`
}

// MarshalJSON writes the JSON form of the wire contract:
// {"steps":[...],"done":[...]}, done omitted when empty.
func (s *Slip) MarshalJSON() ([]byte, error) {
	out := jsonSlip{Steps: make([]jsonStop, 0, len(s.steps))}
	for _, stop := range s.steps {
		out.Steps = append(out.Steps, jsonStop{Exchange: stop.Exchange, RoutingKey: stop.RoutingKey, Name: stop.Name})
	}
	for _, stop := range s.done {
		j := jsonStop{Exchange: stop.Exchange, RoutingKey: stop.RoutingKey, Name: stop.Name}
		if !stop.CompletedAt.IsZero() {
			j.CompletedAt = stop.CompletedAt.UTC().Format(time.RFC3339)
		}
		out.Done = append(out.Done, j)
	}
	return json.Marshal(out)
}

// maxSlipBytes bounds the slip header the decoder reads; an AMQP header
// block is smaller than this anyway.
const maxSlipBytes = 1 << 20

// ParseSlip decodes the JSON form of a slip (the acemq-routing-slip
// header's value). Anything that is not that JSON is an error wrapping
// ErrUnreadableSlip; it never panics.
func ParseSlip(value []byte) (*Slip, error) {
	if len(value) > maxSlipBytes {
		return nil, fmt.Errorf("%w: the %s header is %d bytes, more than the %d a slip may take", ErrUnreadableSlip, HeaderRoutingSlip, len(value), maxSlipBytes)
	}
	var in jsonSlip
	if err := json.Unmarshal(value, &in); err != nil {
		return nil, fmt.Errorf("%w: the %s header is not the slip's JSON: %v", ErrUnreadableSlip, HeaderRoutingSlip, err)
	}
	s := &Slip{form: FormJSON}
	for _, j := range in.Steps {
		s.steps = append(s.steps, Stop{Exchange: j.Exchange, RoutingKey: j.RoutingKey, Name: j.Name})
	}
	for _, j := range in.Done {
		stop := Stop{Exchange: j.Exchange, RoutingKey: j.RoutingKey, Name: j.Name}
		if j.CompletedAt != "" {
			at, err := time.Parse(time.RFC3339Nano, j.CompletedAt)
			if err != nil {
				return nil, fmt.Errorf("%w: completedAt %q of step %s is not an RFC 3339 time", ErrUnreadableSlip, wire.Shorten(j.CompletedAt), stop.label())
			}
			stop.CompletedAt = at.UTC().Truncate(time.Second) // as it is written again
		}
		s.done = append(s.done, stop)
	}
	return s, nil
}

// ReadSlip reads the slip a delivery carries: the JSON header first, then
// the declared route headers (as Delivery.Route, RoutePosition and RouteID).
// found is false when it carries neither. A declared route's stops have
// names but no exchange until AlongRoute gives them one (Slip.AsSteps); a
// position past the end leaves no stop remaining. An unreadable JSON header
// (not text, not the JSON) is an error wrapping ErrUnreadableSlip.
func ReadSlip(d messaging.Delivery) (slip *Slip, found bool, err error) {
	if value, ok := d.Headers[HeaderRoutingSlip]; ok {
		var text []byte
		switch v := value.(type) {
		case string:
			text = []byte(v)
		case []byte:
			text = v
		default:
			return nil, true, fmt.Errorf("%w: the %s header is a %T, not text", ErrUnreadableSlip, HeaderRoutingSlip, value)
		}
		slip, err := ParseSlip(text)
		return slip, true, err
	}
	if len(d.Route) == 0 {
		return nil, false, nil
	}
	s := &Slip{form: FormSteps, runID: d.RouteID}
	position := min(max(d.RoutePosition, 0), len(d.Route))
	for i, name := range d.Route {
		stop := Stop{Name: name, RoutingKey: name}
		if i < position {
			s.done = append(s.done, stop)
		} else {
			s.steps = append(s.steps, stop)
		}
	}
	return s, true, nil
}
