package streaming

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smarty/assertions/should"
)

// The runtime's settlement cannot publish here (the fake connection opens no
// writer), so setting the poison message aside fails; the stream can return
// one delivery to its queue.

// poisonedBatch pushes ten deliveries, "4" of which always fails, and
// listens with batches of ten.
func (f *ConsumerFixture) poisonedBatch() {
	f.handler = &fakeHandler{panicOn: poisonFour}
	for i := range 10 {
		d := delivery(fmt.Sprint(i))
		d.DeliveryID = uint64(i + 1)
		f.stream.push(d)
	}
	f.listen(SubscriptionOptions.BatchCapacity(10))
}

func (f *ConsumerFixture) TestAFailedSetAsideReturnsThatDeliveryAloneAndTheSessionGoesOn() {
	f.inBubble(func() {
		f.poisonedBatch()

		eventually(f.T(), func() bool { return acknowledged(f.stream) == 9 })
		f.So(f.stream.requeuedIDs(), should.Equal, []string{"4"})
		f.So(slices.Contains(f.stream.ackedFlat(), "4"), should.BeFalse)
		f.So(f.stream.isClosed(), should.BeFalse) // the session goes on
		f.So(f.monitor.list(), should.Contain, "requeued q 1")
		f.So(f.monitor.list(), should.NotContain, "closed q")
		f.So(f.logs.String(), should.ContainSubstring, "Returned [1] delivery(ies) of stream [q] to the queue, alone")
		f.So(f.logs.String(), should.NotContainSubstring, "panicked")
	})
}

func (f *ConsumerFixture) TestAfterARequeueTheWorkerWaitsTheReconnectDelayBeforeItsNextBatch() {
	f.inBubble(func() {
		f.poisonedBatch()
		eventually(f.T(), func() bool { return acknowledged(f.stream) == 9 })
		requeued := time.Now()

		f.stream.push(delivery("10"))
		eventually(f.T(), func() bool { return acknowledged(f.stream) == 9 }) // not yet: the worker waits
		time.Sleep(1200 * time.Millisecond)                                   // the bubble's clock: the delay, jittered, has passed
		eventually(f.T(), func() bool { return acknowledged(f.stream) == 10 })
		f.So(time.Since(requeued), should.BeGreaterThanOrEqualTo, 800*time.Millisecond)
	})
}

func (f *ConsumerFixture) TestAFailedRequeueEndsTheSessionAsBefore() {
	f.inBubble(func() {
		f.stream.requeueErr = errors.New("channel closed")
		f.poisonedBatch()

		f.concluded()
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.So(f.stream.isClosed(), should.BeTrue)
		f.So(f.monitor.list(), should.Contain, "closed q")
		f.So(f.logs.String(), should.ContainSubstring, "Unable to return delivery [4] of stream [q] to its queue [channel closed]")
	})
}

func (f *ConsumerFixture) TestWithoutTheCapabilityAFailedSetAsideEndsTheSession() {
	f.inBubble(func() {
		f.connector.noRequeue = true
		f.poisonedBatch()

		f.concluded()
		f.So(f.stream.ackedIDs(), should.BeEmpty) // the whole batch goes back, as before
		f.So(f.stream.isClosed(), should.BeTrue)
		f.So(f.monitor.list(), should.NotContain, "requeued q 1")
	})
}
