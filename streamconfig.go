package messaging

import "fmt"

// StreamConfig describes the queue a Reader consumes and the topology around it.
type StreamConfig struct {
	// StreamName is the queue to consume.
	StreamName string
	// ConsumerName is reported to the broker as the consumer tag prefix.
	ConsumerName string
	// Topics are the exchanges the queue is bound to when EstablishTopology is
	// set: the fanout shorthand (a durable fanout exchange each, key "").
	Topics []string
	// Bindings are further bindings when EstablishTopology is set: each
	// declares its exchange (durable, of its Kind: topic when it has a Key and
	// no Kind, see StreamBindings) and binds under its Key.
	Bindings []StreamBinding
	// EstablishTopology declares the queue, the topic exchanges and their bindings.
	EstablishTopology bool
	// Replication declares the queue as a quorum queue.
	Replication bool
	// QueueType declares the queue of this type (classic, quorum, stream);
	// empty follows Replication. Replication with another type is an error.
	QueueType QueueType
	// QueueArguments are declared on the queue besides the type and the
	// dead-letter arguments (x-max-length, x-message-ttl, ...).
	QueueArguments map[string]any
	// ExclusiveStream declares the queue exclusive to this connection.
	ExclusiveStream bool
	// AutoDeleteStream declares the queue auto-delete: it goes with its last consumer.
	AutoDeleteStream bool
	// TransientStream declares the queue non-durable.
	TransientStream bool
	// ConsumerArguments are passed to the consume call (x-stream-offset on a
	// stream queue, x-priority).
	ConsumerArguments map[string]any
	// ExactConsumerTag makes ConsumerName the consumer tag as it is, without
	// the unique suffix; two consumers with one tag on one channel are refused.
	ExactConsumerTag bool
	// Poll reads with basic.get, one message per Read, instead of a consumer:
	// Read returns ErrQueueEmpty at once when no message is ready.
	Poll bool
	// DeadLetters declares the settlement topology at start: the acemq.dlx
	// exchange and the {queue}.dlq and {queue}.parked queues bound to it.
	DeadLetters bool
	// BufferCapacity is the broker prefetch (deliveries held unacknowledged).
	BufferCapacity uint16
	// BatchCapacity is the largest batch a consumer forms from the stream.
	BatchCapacity uint16
}

// SourceQueue is the queue a stream declares for c with EstablishTopology:
// durable unless TransientStream, exclusive and auto-delete as asked, of
// QueueType (quorum with Replication, classic by default), with
// QueueArguments and, with DeadLetters, x-dead-letter-exchange = acemq.dlx and
// x-dead-letter-routing-key = {queue}.dlq, as every AceMQ library declares it.
// A stream queue gets no dead-letter arguments: RabbitMQ refuses them on a
// stream, which never dead-letters (settlement publishes its set-aside copies
// itself).
func (c StreamConfig) SourceQueue() (Queue, error) {
	q := Queue{
		Name: c.StreamName, Type: c.QueueType,
		Durable: !c.TransientStream, Exclusive: c.ExclusiveStream, AutoDelete: c.AutoDeleteStream,
	}
	if c.Replication {
		if q.Type != "" && q.Type != QueueQuorum {
			return Queue{}, fmt.Errorf("stream %q: Replication asks for a quorum queue but QueueType is %s; state the type once", c.StreamName, q.Type)
		}
		q.Type = QueueQuorum
	}
	arguments := make(map[string]any, len(c.QueueArguments)+2)
	for name, value := range c.QueueArguments {
		arguments[name] = value
	}
	if c.DeadLetters && q.Type != QueueStream && c.QueueArguments[QueueTypeArgument] != string(QueueStream) {
		arguments["x-dead-letter-exchange"] = "acemq.dlx"
		arguments["x-dead-letter-routing-key"] = c.StreamName + ".dlq"
	}
	if len(arguments) > 0 {
		q.Arguments = arguments
	}
	if _, err := QueueArguments(q); err != nil {
		return Queue{}, err
	}
	return q, nil
}

// StreamBindings are the bindings a stream declares with EstablishTopology:
// one with key "" per Topics entry, then Bindings. A binding without a Kind
// takes its exchange's: the Kind another binding to that exchange states;
// else topic when a binding to it carries a routing key, as the AceMQ family
// declares a key-routed topic; else fanout, as smarty/messaging v4 declares
// its topics. On a topic exchange a key-less binding of no Kind binds with
// "#", so a Topics entry still receives everything published there.
func (c StreamConfig) StreamBindings() []StreamBinding {
	bindings := make([]StreamBinding, 0, len(c.Topics)+len(c.Bindings))
	for _, topic := range c.Topics {
		bindings = append(bindings, StreamBinding{Exchange: topic})
	}
	bindings = append(bindings, c.Bindings...)
	kinds := map[string]ExchangeKind{}
	for _, b := range bindings {
		switch {
		case b.Kind != "":
			kinds[b.Exchange] = b.Kind
		case b.Key != "" && kinds[b.Exchange] == "":
			kinds[b.Exchange] = ExchangeTopic
		}
	}
	for i, b := range bindings {
		if b.Kind != "" {
			continue
		}
		bindings[i].Kind = kinds[b.Exchange]
		switch {
		case bindings[i].Kind == "":
			bindings[i].Kind = ExchangeFanout
		case bindings[i].Kind == ExchangeTopic && b.Key == "":
			bindings[i].Key = "#"
		}
	}
	return bindings
}
