package faults

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/serialization"
)

// Scenario 4: a memory alarm during publishing. While the alarm holds, every
// publish fails fast (each call under 1 s) and no goroutine piles up; once it
// clears, publishing works again and everything confirmed arrives.
func TestFaultPublishDuringMemoryAlarm(t *testing.T) {
	url := testenv.Disrupt(t)
	during := size(2, 20)
	after := size(1_000, 10_000)
	queue := testenv.Name(t, "alarm")
	exchange := testenv.Name(t, "alarm-ex")
	declareQueue(t, url, queue, exchange)
	t.Cleanup(func() {
		if _, err := rabbitmqctl(context.Background(), "set_vm_memory_high_watermark", "0.4"); err != nil {
			t.Errorf("clear the memory alarm: %v", err)
		}
	})
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	started := time.Now()
	tl := newTally()

	connector := serialization.New(transport(t, url, connName),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(faultMessage{}): faultMessageType}))
	writer := batch.New(connector)
	defer func() { _ = connector.Close() }()
	defer func() { _ = writer.Close() }()

	write := func(chunk []string) (time.Duration, error) {
		tl.send(chunk...)
		ctx, cancel := context.WithTimeout(context.Background(), 3*brokerTimeout)
		defer cancel()
		began := time.Now()
		_, err := writer.Write(ctx, dispatches(exchange, chunk)...)
		tl.confirm(landed(chunk, err)...)
		return time.Since(began), err
	}
	// A healthy publish first, so the writer holds an open connection when the
	// alarm is raised.
	if _, err := write(ids(10)); err != nil {
		t.Fatalf("publish before the alarm: %v", err)
	}
	// The connection check at the end can only fail if the broker lists the
	// writer's connection under its name: make sure it does.
	if open, err := brokerConnections(connName); err != nil || open < 1 {
		t.Errorf("the broker lists %d connection(s) named %q while the writer holds one (%v); the connection check cannot work", open, connName, err)
	}

	clearMemoryAlarm(t) // a previous test's alarm may not have cleared yet
	raiseMemoryAlarm(t)
	goroutinesAtAlarm := runtime.NumGoroutine()
	peak := &peakGoroutines{}
	slow, succeeded, paused := 0, 0, 0
	var slowest time.Duration
	var firstErr error
	for i := 0; i < during; i++ {
		took, err := write(ids(1))
		peak.sample()
		slowest = max(slowest, took)
		if took >= time.Second {
			slow++
		}
		if err == nil {
			succeeded++
			continue
		}
		if errors.Is(err, messaging.ErrPublishingPaused) {
			paused++
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	t.Logf("during the alarm: %d publish(es), %d took 1 s or more (slowest %s), %d succeeded, %d paused; the first error: %v", during, slow, slowest, succeeded, paused, firstErr)
	if slow > 0 {
		t.Errorf("%d of %d publishes during the memory alarm took 1 s or more (the slowest %s); they must fail fast", slow, during, slowest)
	}
	// The broker may still confirm the publish that made it block a
	// connection, so a success is no fault; but the alarm must have stopped
	// publishing, or the scenario proved nothing.
	if paused == 0 {
		t.Errorf("no publish during the memory alarm failed with ErrPublishingPaused (the first error: %v)", firstErr)
	}
	if grown := peak.value() - goroutinesAtAlarm; grown > 20 {
		t.Errorf("goroutines piled up during the alarm: %d when it was raised, %d at the peak", goroutinesAtAlarm, peak.value())
	}

	clearMemoryAlarm(t)
	// Publishing works again: the writer redials and everything it confirms arrives.
	remaining := ids(after)
	recovered := testenv.Poll(30*time.Second, func() bool {
		_, err := write(remaining[:100])
		return err == nil
	})
	if !recovered {
		t.Fatalf("publishing did not work again within 30 s of the memory alarm clearing")
	}
	for start := 100; start < len(remaining); start += 100 {
		if _, err := write(remaining[start:min(start+100, len(remaining))]); err != nil {
			t.Errorf("publish after the alarm cleared: %v", err)
		}
	}
	_ = writer.Close()
	_ = connector.Close()
	drain(t, url, queue, tl)
	report(t, "publish-memory-alarm", tl, started)
	base.check(t)
}

// raiseMemoryAlarm sets the watermark so low that the broker raises its memory
// alarm, and waits (bounded) until the alarm is really raised.
func raiseMemoryAlarm(t *testing.T) {
	t.Helper()
	if _, err := rabbitmqctl(context.Background(), "set_vm_memory_high_watermark", "0.000001"); err != nil {
		t.Fatalf("raise the memory alarm: %v", err)
	}
	if !testenv.Poll(30*time.Second, func() bool { return memoryAlarm(t) }) {
		t.Fatalf("the memory alarm was not raised within 30 s of lowering the watermark")
	}
}

// clearMemoryAlarm restores the watermark and waits (bounded) for the alarm to
// clear.
func clearMemoryAlarm(t *testing.T) {
	t.Helper()
	if _, err := rabbitmqctl(context.Background(), "set_vm_memory_high_watermark", "0.4"); err != nil {
		t.Fatalf("clear the memory alarm: %v", err)
	}
	if !testenv.Poll(30*time.Second, func() bool { return !memoryAlarm(t) }) {
		t.Fatalf("the memory alarm did not clear within 30 s of restoring the watermark")
	}
}

func memoryAlarm(t *testing.T) bool {
	t.Helper()
	out, err := rabbitmqctl(context.Background(), "-q", "eval", "rabbit_alarm:get_alarms().")
	if err != nil {
		t.Fatalf("read the broker's alarms: %v", err)
	}
	return strings.Contains(out, "memory")
}
