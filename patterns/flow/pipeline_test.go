package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/retrypolicy"
)

type reservation struct{ Order string }

func TestPipelineBuildFixture(t *testing.T) {
	gunit.Run(new(PipelineBuildFixture), t)
}

// PipelineBuildFixture checks what NewPipeline refuses before it declares
// anything, with the wire contract's texts.
type PipelineBuildFixture struct {
	*gunit.Fixture
	transport messaging.Connector
}

func (f *PipelineBuildFixture) Setup()    { f.transport = memory.New() }
func (f *PipelineBuildFixture) Teardown() { _ = f.transport.Close() }

func validate(context.Context, messaging.Delivery, order) (order, bool, error) {
	return order{}, true, nil
}
func reserve(context.Context, messaging.Delivery, order) (reservation, bool, error) {
	return reservation{}, true, nil
}
func dispatch(context.Context, messaging.Delivery, order) (order, bool, error) {
	return order{}, true, nil
}

func (f *PipelineBuildFixture) refusal(transport messaging.Connector, name string, parts ...PipelinePart) string {
	p, err := NewPipeline[order](context.Background(), transport, name, parts...)
	f.So(p, should.BeNil)
	f.So(errors.Is(err, ErrInvalidPipeline), should.BeTrue)
	if err == nil {
		return ""
	}
	return err.Error()
}

func (f *PipelineBuildFixture) TestAStepTypeMismatchFailsAtBuildTimeWithTheSeedText() {
	f.So(f.refusal(f.transport, "fulfilment", Step("validate", validate), Step("reserve", reserve), Step("dispatch", dispatch)),
		should.Equal, `acemq: pipeline "fulfilment" step "reserve" produces flow.reservation but the next step "dispatch" consumes flow.order`)
}

func (f *PipelineBuildFixture) TestAPipelineSentAnotherTypeThanItsFirstStepConsumesFails() {
	_, err := NewPipeline[reservation](context.Background(), f.transport, "fulfilment", Step("validate", validate))
	f.So(err.Error(), should.Equal, `acemq: pipeline "fulfilment" is sent flow.reservation but its first step "validate" consumes flow.order`)
}

func (f *PipelineBuildFixture) TestTheOtherRefusals() {
	f.So(f.refusal(nil, "p", Step("a", validate)), should.Equal, "acemq: a pipeline needs a connection")
	f.So(f.refusal(f.transport, "", Step("a", validate)), should.Equal, "acemq: a pipeline needs a name, which is also its exchange")
	f.So(f.refusal(f.transport, "p", Options.Monitor(NopMonitor{})), should.Equal, `acemq: pipeline "p" has no steps`)
	f.So(f.refusal(f.transport, "p", Step("a b", validate)), should.Equal, `acemq: pipeline "p" has a step named "a b", which cannot be a routing key: letters, digits, dots and dashes only`)
	f.So(f.refusal(f.transport, "p", Step(".a", validate)), should.ContainSubstring, `step named ".a"`)
	f.So(f.refusal(f.transport, "p", Step("a", validate), Step("a", validate)), should.Equal, `acemq: pipeline "p" declares the step "a" twice, and two steps by one name are one queue with two handlers`)
	f.So(f.refusal(f.transport, "p", Step("a", validate, StepOptions.Retry(retrypolicy.Fixed(-1, time.Second)))), should.StartWith, `acemq: pipeline "p" step "a" has a retry policy with invalid inputs: `)
}

func (f *PipelineBuildFixture) TestDescribeAndTheTopologyFollowTheDigest() {
	p, err := NewPipeline[order](context.Background(), f.transport, "fulfilment",
		Step("validate", validate), Step("reserve", reserve, StepOptions.DescribedAs("holds stock")),
		Step("dispatch", func(context.Context, messaging.Delivery, reservation) (order, bool, error) { return order{}, true, nil }))
	f.So(err, should.BeNil)
	if err != nil {
		return
	}
	defer p.Close()
	f.So(p.Describe(), should.Equal, "pipeline fulfilment with 3 steps: validate | reserve (holds stock) | dispatch")
	f.So(p.Route(), should.Equal, NewRoute("fulfilment", "validate", "reserve", "dispatch"))
	plan := p.Topology()
	f.So(plan.Exchanges[0], should.Equal, messaging.Exchange{Name: "fulfilment", Kind: messaging.ExchangeDirect, Durable: true})
	f.So(plan.Bindings, should.Contain, messaging.Binding{Exchange: "fulfilment", Queue: "fulfilment.reserve", Key: "reserve"})
	var queue messaging.Queue
	for _, q := range plan.Queues {
		if q.Name == "fulfilment.reserve" {
			queue = q
		}
	}
	f.So(queue.Type, should.Equal, messaging.QueueQuorum)
	f.So(queue.Durable, should.BeTrue)
	f.So(queue.Arguments["x-dead-letter-routing-key"], should.Equal, "fulfilment.reserve.dlq")
	f.So(p.Close(), should.BeNil)
	_, err = p.Send(context.Background(), order{})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *PipelineBuildFixture) TestATransportThatCannotConnectFailsTheBuild() {
	_ = f.transport.Close()
	p, err := NewPipeline[order](context.Background(), f.transport, "p", Step("a", validate))
	f.So(p, should.BeNil)
	f.So(err, should.NotBeNil)
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
	f.So(err.Error(), should.StartWith, `acemq: pipeline "p" could not connect to declare its topology: `)
}

// refusingReaders is a transport whose connections declare (through the
// memory transport beneath) but refuse to open a reader, and that counts
// the connections still open.
type refusingReaders struct {
	messaging.Connector
	mu   sync.Mutex
	open int
}

type refusingConnection struct {
	messaging.Connection
	owner  *refusingReaders
	closed bool
}

func (r *refusingReaders) Connect(ctx context.Context) (messaging.Connection, error) {
	conn, err := r.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.open++
	r.mu.Unlock()
	return &refusingConnection{Connection: conn, owner: r}, nil
}

func (r *refusingReaders) stillOpen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open
}

func (c *refusingConnection) Unwrap() messaging.Connection { return c.Connection }

func (c *refusingConnection) Reader(context.Context) (messaging.Reader, error) {
	return nil, fmt.Errorf("no reading here: %w", messaging.ErrAccessRefused)
}

func (c *refusingConnection) Close() error {
	c.owner.mu.Lock()
	if !c.closed {
		c.closed = true
		c.owner.open--
	}
	c.owner.mu.Unlock()
	return c.Connection.Close()
}

func (f *PipelineBuildFixture) TestAStartFailureClosesWhatWasStarted() {
	transport := &refusingReaders{Connector: f.transport}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := NewPipeline[order](context.Background(), transport, "p", Step("a", validate), Step("b", validate), Options.Logger(quiet))
	f.So(p, should.BeNil)
	f.So(errors.Is(err, messaging.ErrAccessRefused), should.BeTrue)
	f.So(err.Error(), should.StartWith, `acemq: pipeline "p" could not start its steps: `)
	f.So(transport.stillOpen(), should.Equal, 0)
}
