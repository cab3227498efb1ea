package sqltx

import "github.com/warrenmq/messaging/handlers/transactional"

// Monitor receives one callback per step of each batch's transaction:
// TransactionStarted reports BeginTx, TransactionCommitted the commit after the
// handler returned, TransactionRolledBack the rollback after a failure. It is
// handlers/transactional's, since sqltx runs its batches through that core.
type Monitor = transactional.Monitor

// NopMonitor is a Monitor that does nothing.
type NopMonitor = transactional.NopMonitor
