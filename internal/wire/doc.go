// Package wire is the AceMQ wire contract in one place. It holds the AMQP wire
// limits and the envelope's reserved header namespace, checked by every writer
// of this module (rabbitmq, memory, sqlmq) before a dispatch is sent or stored,
// so that a message the broker would refuse, or that would make the client
// close its connection, is refused alone with messaging.ErrWireLimit. It also
// holds the envelope's header names, its encoding into headers and properties
// and its tolerant decoding (Encode, Decode, with the integer, time and
// expiration coercion they use), the names of the set-aside topology
// ({queue}.dlq through acemq.dlx, {queue}.parked), and what a stream declares
// when it opens (TopologyOf), which both transports run.
package wire
