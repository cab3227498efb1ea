package rabbitmq

// SupportsStreams reports that RabbitMQ consumes stream queues (3.9 and
// later), so patterns/streams reads them on this transport. A capability
// question a stream reader asks before it declares or consumes anything.
func (c *connector) SupportsStreams() bool { return true }

// SupportsStreams reports that RabbitMQ consumes stream queues; see the
// connector's.
func (c *connection) SupportsStreams() bool { return true }
