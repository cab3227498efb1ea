package streaming

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/retrypolicy"
)

// batchOfTen is ten deliveries: "4" fails whenever it is handled, "7" did
// not decode.
func batchOfTen() []messaging.Delivery {
	deliveries := make([]messaging.Delivery, 10)
	for i := range deliveries {
		deliveries[i] = delivery(fmt.Sprint(i))
		deliveries[i].DeliveryID = uint64(i + 1)
	}
	deliveries[7].Message = nil
	deliveries[7].Undecodable = errors.New("could not be decoded: not JSON")
	return deliveries
}

func poisonFour(messages []any) any {
	if slices.Contains(messages, any("4")) {
		return errors.New("boom")
	}
	return nil
}

// successes counts, per message, the batches that returned normally.
func successes(h *fakeHandler) map[any]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[any]int{}
	for _, batch := range h.batches {
		if poisonFour(batch) != nil {
			continue
		}
		for _, m := range batch {
			if d, ok := m.(messaging.Delivery); ok {
				m = d.Message
			}
			counts[m]++
		}
	}
	return counts
}

func (f *ConsumerFixture) TestWithoutASettlementDecoratorTheRuntimeParksAndDeadLetters() {
	f.inBubble(func() {
		f.connector.writable = true
		f.handler = &fakeHandler{panicOn: poisonFour}
		f.stream.push(batchOfTen()...)
		f.listen(SubscriptionOptions.BatchCapacity(10),
			SubscriptionOptions.RetryPolicy(retrypolicy.Exponential(3, time.Second, time.Minute)))

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 10 })
		f.So(f.connector.publishedTo(), should.Equal, []string{
			"q.dlq 4: exhausted 3 attempts: boom",
			"q.parked 7: could not be decoded: not JSON",
		})
		counts := successes(f.handler)
		for _, id := range []string{"0", "1", "2", "3", "5", "6", "8", "9"} {
			f.So(counts[id], should.Equal, 1)
		}
		f.So(counts["4"], should.Equal, 0)
		f.So(counts[nil], should.Equal, 0) // the undecodable one never reached the handler
		f.So(f.logs.String(), should.NotContainSubstring, "panicked")
	})
}

func (f *ConsumerFixture) TestTheRuntimesSettlementNamesNoBudgetItWasNotTold() {
	f.inBubble(func() {
		f.connector.writable = true
		f.handler = &fakeHandler{panicOn: poisonFour}
		f.stream.push(delivery("4"))
		f.listen()

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 1 })
		f.So(f.connector.publishedTo(), should.Equal, []string{"q.dlq 4: the handler failed: boom"})
	})
}

func (f *ConsumerFixture) TestASettlementDecoratorOfTheUsersOwnSetsAsideOnce() {
	f.inBubble(func() {
		f.connector.writable = true
		f.handler = &fakeHandler{panicOn: poisonFour}
		own := deadletter.New(f.connector, f.handler, deadletter.Options.Policy(retrypolicy.Fixed(2, 0)))
		f.stream.push(batchOfTen()...)
		f.listenAll(NewSubscription("q",
			SubscriptionOptions.AddWorkers(own),
			SubscriptionOptions.FullDeliveryToHandler(true),
			SubscriptionOptions.BatchCapacity(10),
		))

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 10 })
		f.So(f.connector.publishedTo(), should.Equal, []string{
			"q.dlq 4: exhausted 2 attempts: boom", // the user's decorator's reason, once
			"q.parked 7: could not be decoded: not JSON",
		})
		counts := successes(f.handler)
		f.So(counts["0"], should.Equal, 1)
		f.So(counts["4"], should.Equal, 0)
	})
}

func (f *ConsumerFixture) TestAnOutageIsNotSetAsideByTheRuntime() {
	f.inBubble(func() {
		f.connector.writable = true
		f.handler = &fakeHandler{panicOn: func([]any) any { return databaseDown }}
		f.listen()
		f.stream.push(delivery("1"))
		f.concluded()
		f.So(f.connector.publishedTo(), should.BeEmpty)
		f.So(f.stream.ackedIDs(), should.BeEmpty)
	})
}

// acknowledged counts the deliveries acknowledged on s.
func acknowledged(s *fakeStream) int {
	n := 0
	for _, batch := range s.ackedIDs() {
		n += len(batch)
	}
	return n
}

func (f *ConsumerFixture) TestARefusedRetryIsParkedByTheRuntime() {
	f.inBubble(func() {
		f.connector.writable = true
		retrying := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, d := range messaging.DeliveriesFrom(ctx) {
				if err := messaging.Retry(ctx, d, errors.New("busy")); err != nil {
					panic(err)
				}
			}
		})
		f.stream.push(delivery("1"))
		f.listenAll(NewSubscription("q", SubscriptionOptions.AddWorkers(retrying), SubscriptionOptions.RefuseRetry("a stream")))

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 1 })
		f.So(f.connector.publishedTo(), should.Equal, []string{"q.parked 1: this consumer does not retry (a stream): busy"})
	})
}

// settlementEvents records the runtime's settlement's callbacks.
type settlementEvents struct {
	mu     sync.Mutex
	events []string
}

func (m *settlementEvents) Settled(queue, action, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, queue+" "+action+" "+reason)
}

func (m *settlementEvents) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.events...)
}

func (f *ConsumerFixture) TestTheSubscriptionsSettlementOptionsConfigureTheRuntimesSettlement() {
	f.inBubble(func() {
		f.connector.writable = true
		f.handler = &fakeHandler{panicOn: poisonFour}
		f.stream.push(delivery("4"))
		settled := &settlementEvents{}
		f.listen(SubscriptionOptions.Settlement(
			deadletter.Options.Policy(retrypolicy.Fixed(4, time.Second)),
			deadletter.Options.Monitor(settled)))

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 1 })
		f.So(f.connector.publishedTo(), should.Equal, []string{"q.dlq 4: exhausted 4 attempts: boom"})
		f.So(settled.list(), should.Equal, []string{"q dead_lettered exhausted 4 attempts: boom"})
	})
}

func (f *ConsumerFixture) TestEverySubscriptionsSettlementPublishesThroughOneConnection() {
	f.inBubble(func() {
		f.connector.writable = true
		streams := map[string]*fakeStream{"a": newFakeStream(), "b": newFakeStream()}
		f.connector.streamFor = func(queue string) (*fakeStream, error) { return streams[queue], nil }
		poisoned := &fakeHandler{panicOn: func([]any) any { return errors.New("boom") }}
		f.listenAll(
			NewSubscription("a", SubscriptionOptions.AddWorkers(poisoned, poisoned)),
			NewSubscription("b", SubscriptionOptions.AddWorkers(poisoned)),
		)
		for queue, stream := range streams {
			for i := range 3 {
				d := delivery(fmt.Sprint(queue, i))
				d.SourceQueue = queue
				stream.push(d)
			}
		}

		eventually(f.T(), func() bool { return acknowledged(streams["a"]) == 3 && acknowledged(streams["b"]) == 3 })
		f.So(f.connector.publishedTo(), should.HaveLength, 6)
		f.So(f.connector.connectionCount(), should.Equal, 3) // a stream each, and the settlement's one
	})
}

func (f *ConsumerFixture) TestTheSubscriptionDecidesWhatItsHandlersReceive() {
	f.inBubble(func() {
		f.handler = &fakeHandler{}
		f.stream.push(delivery("1"))
		f.listen(SubscriptionOptions.Settlement(deadletter.Options.FullDelivery(true)))

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 1 })
		f.So(f.handler.handled(), should.Equal, [][]any{{"1"}})
	})
}
