// Package wire holds the AMQP wire limits and the envelope's reserved header
// namespace, checked in one place by every writer of this module (rabbitmq,
// memory, sqlmq) before a dispatch is sent or stored, so that a message the
// broker would refuse, or that would make the client close its connection, is
// refused alone with messaging.ErrWireLimit.
package wire
