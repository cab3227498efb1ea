package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// writerFunc is a Writer whose Write answers through a function.
type writerFunc func(dispatches ...messaging.Dispatch) error

func (w writerFunc) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if err := w(dispatches...); err != nil {
		return 0, err
	}
	return len(dispatches), nil
}
func (w writerFunc) Close() error { return nil }

// recordingSettler records the decisions a handler asks for.
type recordingSettler struct {
	mu        sync.Mutex
	decisions []messaging.Decision
}

func (r *recordingSettler) Settle(_ context.Context, _ messaging.Delivery, decision messaging.Decision) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, decision)
	return nil
}

func (r *recordingSettler) Decided(messaging.Delivery) (messaging.Decision, bool) {
	return messaging.Decision{}, false
}

func dueNow() messaging.Delivery {
	return messaging.Delivery{MessageID: "m", DeliveryID: 1, Payload: []byte("x"), Headers: map[string]any{
		HeaderExchange: "billing", HeaderRoutingKey: "invoice.due", HeaderDueAt: time.Now().UnixMilli(), HeaderContentType: "text/plain",
	}}
}

func unroutable() error {
	return &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "m", Confirmed: true, Err: fmt.Errorf("no route: %w", messaging.ErrUnroutable)}}}
}

// TestTheControlConsumerTellsAnOutageFromAFailure: a delivery the broker
// refuses is set aside with the reason; one that fails because the broker is
// away or closed the connection under the publish, or because the handler's
// context ended (a shutdown), is left for the broker to redeliver, marked as an outage so nothing sets it aside; one that
// reaches no queue goes on the 10 s rung, and is set aside only when no rung
// takes it.
func TestTheControlConsumerTellsAnOutageFromAFailure(t *testing.T) {
	refused := fmt.Errorf("nack: %w", messaging.ErrRefused)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		what     string
		ctx      context.Context
		write    func(ds ...messaging.Dispatch) error
		outage   bool
		verdict  messaging.Verdict
		hopRungs []string
	}{
		{what: "refused", ctx: context.Background(), write: func(...messaging.Dispatch) error { return refused }, verdict: messaging.Rejected},
		{what: "broker away", ctx: context.Background(), write: func(...messaging.Dispatch) error { return messaging.Outage(errors.New("connection refused")) }, outage: true},
		{what: "connection closed by the broker", ctx: context.Background(), write: func(...messaging.Dispatch) error {
			return fmt.Errorf("batch writer: publish 1 message(s): the AMQP connection is closed (%w); connect again: %w",
				&messaging.BrokerError{Code: messaging.ReplyConnectionForced, Text: "CONNECTION_FORCED"}, messaging.ErrClosed)
		}, outage: true},
		{what: "confirm lost with the connection", ctx: context.Background(), write: func(...messaging.Dispatch) error {
			return &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "m", Err: messaging.ErrArrivalUnknown}}}
		}, outage: true},
		{what: "shutdown", ctx: cancelled, write: func(...messaging.Dispatch) error { return context.Canceled }, outage: true},
		{what: "unbound", ctx: context.Background(), write: func(ds ...messaging.Dispatch) error {
			if ds[0].Topic == Exchange {
				return nil
			}
			return unroutable()
		}, hopRungs: []string{RungName(10 * time.Second)}},
		{what: "unbound, no rung", ctx: context.Background(), write: func(...messaging.Dispatch) error { return unroutable() }, verdict: messaging.Rejected},
	} {
		settler := &recordingSettler{}
		var rungs []string
		s := &Scheduler{config: newConfig(nil), writer: writerFunc(func(ds ...messaging.Dispatch) error {
			err := c.write(ds...)
			if err == nil && ds[0].Topic == Exchange {
				rungs = append(rungs, ds[0].RoutingKey)
			}
			return err
		})}
		err := s.control(messaging.WithSettler(c.ctx, settler), dueNow())
		if messaging.IsOutage(err) != c.outage {
			t.Errorf("%s: error %v, outage %v", c.what, err, c.outage)
		}
		switch {
		case c.verdict == messaging.Undecided && len(settler.decisions) != 0:
			t.Errorf("%s: settled %v", c.what, settler.decisions)
		case c.verdict != messaging.Undecided && (len(settler.decisions) != 1 || settler.decisions[0].Verdict != c.verdict):
			t.Errorf("%s: settled %v, want %v", c.what, settler.decisions, c.verdict)
		}
		if fmt.Sprint(rungs) != fmt.Sprint(c.hopRungs) {
			t.Errorf("%s: hopped %v, want %v", c.what, rungs, c.hopRungs)
		}
	}
}

// TestAWriteOnAConnectionThatClosedIsHeldAsAnOutage: a hop refused because
// its connection closed (nothing sent; batch.Writer, the scheduler's writer,
// has already made it once more on a new connection) or whose arrival is
// unknown is held as an outage: the control message stays unacknowledged and
// nothing is set aside.
func TestAWriteOnAConnectionThatClosedIsHeldAsAnOutage(t *testing.T) {
	closed := fmt.Errorf("the AMQP connection is closed: %w", messaging.ErrClosed)
	unknown := fmt.Errorf("confirm lost: %w, %w", messaging.ErrClosed, messaging.ErrArrivalUnknown)
	for _, c := range []struct {
		what   string
		first  error
		writes int
		outage bool
	}{
		{what: "closed before it was sent", first: closed, writes: 1, outage: true},
		{what: "arrival unknown", first: unknown, writes: 1, outage: true},
	} {
		writes := 0
		s := &Scheduler{config: newConfig(nil), writer: writerFunc(func(...messaging.Dispatch) error {
			writes++
			if writes == 1 {
				return c.first
			}
			return nil
		})}
		settler := &recordingSettler{}
		d := dueNow()
		d.Headers[HeaderDueAt] = time.Now().Add(5 * time.Second).UnixMilli()
		err := s.control(messaging.WithSettler(context.Background(), settler), d)
		if writes != c.writes || messaging.IsOutage(err) != c.outage || (err == nil) == c.outage || len(settler.decisions) != 0 {
			t.Errorf("%s: %d write(s), error %v, settled %v; want %d write(s), outage %t", c.what, writes, err, settler.decisions, c.writes, c.outage)
		}
		if !c.outage && s.Hops() != 1 {
			t.Errorf("%s: %d hop(s) counted, want 1", c.what, s.Hops())
		}
	}
}
