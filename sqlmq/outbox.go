package sqlmq

import (
	"context"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
)

// publisher is what the processor needs from the transport: a write that lands
// whole (confirmed and routed) or reports, as a *messaging.PublishError when it
// can, which messages did not.
type publisher interface {
	Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error)
	Close() error
}

// outbox is the state the connector (the writing side) and the processor (the
// publishing side) share: the config, the table, and the channel
// between them.
type outbox struct {
	config  config
	store   *store
	ctx     context.Context
	cancel  context.CancelFunc
	channel chan row
	// wake tells the processor that a handoff left rows in the table.
	wake chan struct{}

	mu       sync.Mutex
	stopping bool
	expected map[int64]struct{} // rows handed off (or claimed) and not yet settled
	// inflight are the rows of transactions between their INSERT and their
	// handoff: committed perhaps, but not yet handed over. A read of the
	// table leaves them to their handoff, which may come just after a
	// catch-up pass read them: published from both, they would go twice.
	inflight map[int64]struct{}
	// suspended is set when a handoff found the channel full: later commits
	// leave their rows in the table too, so the processor, which publishes them
	// from there in id order once its channel is empty, keeps commit order.
	suspended bool
	// missed is set by every handoff that left rows in the table; the
	// processor clears it before each read of the table, and resumes handoffs
	// only after a read that found nothing while it stayed clear.
	missed bool
}

// New returns the outbox over transport: a Connector whose CommitWriter stores
// dispatches in the caller's SQL transaction, and the dispatch processor that
// publishes them through transport. Run the processor's Listen on a goroutine
// of its own and Close it after the consumers that write through the outbox.
//
// The outbox does not close transport: it is usually shared with consumers.
func New(transport messaging.Connector, options ...Option) (messaging.Connector, messaging.ListenCloser) {
	c := newConfig(options)
	if c.newPublisher == nil {
		c.newPublisher = func() publisher { return batch.New(transport) }
	}
	o := newOutbox(c)
	return &connector{outbox: o, transport: transport, open: map[*connection]struct{}{}}, &processor{outbox: o, done: make(chan struct{})}
}

func newOutbox(c config) *outbox {
	ctx, cancel := context.WithCancel(c.ctx)
	return &outbox{
		config:   c,
		store:    newStore(c.db, c.dialect, c.table),
		ctx:      ctx,
		cancel:   cancel,
		channel:  make(chan row, c.channelCap),
		wake:     make(chan struct{}, 1),
		expected: map[int64]struct{}{},
		inflight: map[int64]struct{}{},
	}
}

// committing records rows a transaction inserted, until their handoff (or
// settle, when the transaction did not commit) takes them.
func (o *outbox) committing(ids []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		o.inflight[id] = struct{}{}
	}
}

// withoutCommitting returns rows less those whose transaction has not yet
// handed them off: their handoff publishes them.
func (o *outbox) withoutCommitting(rows []row) []row {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := rows[:0:0]
	for _, r := range rows {
		if _, committing := o.inflight[r.id]; !committing {
			kept = append(kept, r)
		}
	}
	return kept
}

// settled forgets rows committing recorded whose transaction ended without
// a handoff (rolled back, failed, or left to the lease).
func (o *outbox) settled(ids []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		delete(o.inflight, id)
	}
}

func (o *outbox) forget(rows []row) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		delete(o.expected, r.id)
	}
}

func (o *outbox) isExpected(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.expected[id]
	return ok
}
