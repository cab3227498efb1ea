package memory

// SupportsStreams reports that the in-memory broker does not consume stream
// queues: it declares them (recording their arguments) and has no log,
// offsets or replay, so patterns/streams refuses to read on it before it
// declares or consumes anything.
func (b *Broker) SupportsStreams() bool { return false }

// SupportsStreams reports that the in-memory broker does not consume stream
// queues; see the Broker's.
func (c *connection) SupportsStreams() bool { return false }
