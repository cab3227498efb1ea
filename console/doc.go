// Package console is the operator's web page over a service built on this
// library: its queues with their depth over the last minutes, the messages
// set aside in its dead-letter and parking queues grouped by reason, replay
// of a group, a selection or a filter back to the queue they came from, its
// outbox tables, and the health of its services and streams.
//
//	c := console.New(
//		console.Options.Connector(transport), // the raw transport
//		console.Options.Queues("orders.ship"), // and what the naming implies
//		console.Options.Policy(budget),        // to watch its retry rungs
//		console.Options.Outbox("Messages", sqlmq.NewAdmin(db)),
//		console.Options.Actions(true),         // replay and release; default read-only
//		console.Options.MountPath("/ops/console/"),
//	)
//	go c.Listen() // samples the queues for the charts until Close
//	defer c.Close()
//	mux.Handle("/ops/console/", requireOperator(c)) // behind the service's own authentication
//
// `warrenmq console` serves it on its own, with an access token when it
// listens beyond loopback (see doc/console.md).
//
// Reading a set-aside queue takes nothing from it and does not reorder it:
// the console fetches messages with basic.get, holds them unacknowledged,
// and hands them all back by closing the channel, which puts each at the
// position it had in a classic queue (the library declares every {queue}.dlq
// and {queue}.parked classic). Every read is bounded: a page reads at most
// ScanLimit messages for at most ScanBudget and says which part of the queue
// its counts cover, holds at most PageSize messages (their payloads cut to
// a preview), and every broker or database call of a page is bounded by
// PageTimeout, past which the page says what did not answer.
//
// Replay is patterns/replay: a dry run counts what would move, the operator
// confirms that count, and the replay moves at most that many, each copy
// confirmed by the broker before its original is acknowledged.
//
// Nothing in a message can run in the browser: every page is rendered with
// html/template, payloads are shown as text (a hex dump when they are not
// text), and the Content-Security-Policy allows no script at all. Every
// action is a same-origin POST carrying a CSRF token bound to the session
// cookie. No password of an address given to Options.Redact (nor any URL or
// DSN password) appears on a page or in a log line.
package console
