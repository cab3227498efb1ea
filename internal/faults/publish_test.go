package faults

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/serialization"
)

// Scenario 3: publish through batch.Writer while the broker application is
// stopped and started again (short: once; full: three times). Every call either
// returns an error or its messages arrive: nothing confirmed is lost.
func TestFaultPublishWhileBrokerStopsAndStarts(t *testing.T) {
	url := testenv.Disrupt(t)
	cycles := size(1, 3)
	down := size(2*time.Second, 5*time.Second)
	queue := testenv.Name(t, "publish")
	exchange := testenv.Name(t, "publish-ex")
	declareQueue(t, url, queue, exchange)
	t.Cleanup(func() {
		if _, err := rabbitmqctl(context.Background(), "start_app"); err != nil {
			t.Errorf("restore the broker: %v", err)
		}
		if !testenv.Poll(time.Minute, func() bool { return brokerAnswers(url) }) {
			t.Errorf("the broker did not answer within a minute of start_app; `make services` starts it")
		}
	})
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	started := time.Now()
	tl := newTally()

	connector := serialization.New(transport(t, url, connName),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(faultMessage{}): faultMessageType}))
	writer := batch.New(connector)
	p := startPublisher(writer, exchange, 20, tl)
	// healthy waits for calls confirmed by the running broker: the publisher
	// writes against a healthy broker before each stop and after the last start.
	healthy := func(what string) {
		from := p.calls()
		testenv.Eventually(t, 30*time.Second, what, func() bool { return p.successesSince(from) >= 100 })
	}

	for cycle := 0; cycle < cycles; cycle++ {
		healthy("100 calls confirmed before the broker stops")
		if _, err := rabbitmqctl(context.Background(), "stop_app"); err != nil {
			t.Fatalf("stop the broker: %v", err)
		}
		time.Sleep(down) // the outage's length is the scenario: real time
		before := p.calls()
		if _, err := rabbitmqctl(context.Background(), "start_app"); err != nil {
			t.Fatalf("start the broker: %v", err)
		}
		if !testenv.Poll(time.Minute, func() bool { return brokerAnswers(url) }) {
			t.Fatalf("the broker did not answer within a minute of start_app")
		}
		if !testenv.Poll(30*time.Second, func() bool { return p.successesSince(before) > 0 }) {
			t.Errorf("cycle %d: no publish succeeded within 30 s of the broker starting again", cycle+1)
		}
	}
	healthy("100 calls confirmed after the last start")
	stats := p.stop()

	if err := writer.Close(); err != nil {
		t.Logf("close the writer: %v", err)
	}
	if err := connector.Close(); err != nil {
		t.Logf("close the connector: %v", err)
	}
	if stats.failures == 0 {
		t.Errorf("no publish failed while the broker was stopped; the scenario proved nothing")
	}
	t.Logf("%d call(s): %d succeeded, %d failed; the slowest took %s", stats.calls, stats.successes, stats.failures, stats.slowest)
	drain(t, url, queue, tl)
	report(t, "publish-broker-stop-start", tl, started)
	base.check(t)
}

// publisher writes batches of fresh ids through a Writer in a goroutine it owns,
// recording what each call confirmed.
type publisher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	stats publishStats
	// succeeded holds, for each call in order, whether it returned no error.
	succeeded []bool
}

type publishStats struct {
	calls, successes, failures int
	slowest                    time.Duration
}

func startPublisher(writer messaging.Writer, exchange string, per int, tl *tally) *publisher {
	ctx, cancel := context.WithCancel(context.Background())
	p := &publisher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			chunk := ids(per)
			tl.send(chunk...)
			callCtx, callCancel := context.WithTimeout(ctx, 3*brokerTimeout)
			began := time.Now()
			_, err := writer.Write(callCtx, dispatches(exchange, chunk)...)
			took := time.Since(began)
			callCancel()
			tl.confirm(landed(chunk, err)...)
			p.record(err == nil, took)
			if err != nil {
				time.Sleep(50 * time.Millisecond) // a user's loop would not spin on a dead broker
			}
		}
	}()
	return p
}

func (p *publisher) record(ok bool, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.calls++
	if ok {
		p.stats.successes++
	} else {
		p.stats.failures++
	}
	p.stats.slowest = max(p.stats.slowest, took)
	p.succeeded = append(p.succeeded, ok)
}

func (p *publisher) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.succeeded)
}

func (p *publisher) successesSince(call int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ok := range p.succeeded[call:] {
		if ok {
			n++
		}
	}
	return n
}

// stop ends the goroutine and waits for it; every call it makes is bounded.
func (p *publisher) stop() publishStats {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
