package streaming

import (
	"fmt"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

// The runtime reuses a Delivery once it is acknowledged: the next Read gets
// it zeroed, so a stream that fills only some fields hands on nothing of an
// earlier delivery, and what a handler kept of an earlier batch (its copies
// of the envelopes, its messages) is not touched.
func (f *ConsumerFixture) TestAReadAfterAnAcknowledgementGetsAZeroedDelivery() {
	f.inBubble(func() {
		f.connector.partial = &partialStream{}
		f.handler = &fakeHandler{}
		f.listen()
		for i := range 8 {
			d := messaging.Delivery{DeliveryID: uint64(i + 1), MessageID: fmt.Sprint(i + 1), SourceQueue: "q"}
			if i%2 == 0 { // every other one carries headers and a decoded value
				d.Headers, d.Message = map[string]any{"id": d.MessageID}, "message "+d.MessageID
			}
			f.stream.push(d)
			eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == i+1 })
		}
		reads, unclean := f.connector.partial.counts()
		f.So(reads, should.BeGreaterThanOrEqualTo, 8)
		f.So(unclean, should.Equal, 0)

		batches := f.handler.handled()
		f.So(len(batches), should.Equal, 8)
		for i, batch := range batches {
			envelope := messaging.DeliveriesFrom(f.handler.contexts[i])[0]
			if i%2 == 0 {
				f.So(batch[0], should.Equal, envelope.Message)
				f.So(envelope.Headers["id"], should.Equal, envelope.MessageID)
				continue
			}
			f.So(batch[0], should.BeNil)
			f.So(envelope.Headers, should.BeNil)
		}
	})
}
