package request

import (
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// ReplyAddress returns the queue a request asks its reply to go to: the
// acemq-reply-to header first, because it survives a service rebuilding the
// message, then the AMQP reply-to property. ok is false when it carries
// neither.
func ReplyAddress(delivery messaging.Delivery) (queue string, ok bool) {
	if queue = wire.Text(delivery.Headers[HeaderReplyTo]); queue != "" {
		return queue, true
	}
	if delivery.ReplyTo != "" {
		return delivery.ReplyTo, true
	}
	return "", false
}
