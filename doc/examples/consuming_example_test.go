package examples_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// OrderPlaced is announced when an order is accepted.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Item    string `json:"item"`
}

// OrderShipped is announced when an order has left the warehouse.
type OrderShipped struct {
	OrderID string `json:"order_id"`
}

// shipOrders runs inside the batch's SQL transaction: it marks each order
// shipped and announces it through the outbox writer bound to the same
// transaction, so both commit together or not at all.
type shipOrders struct {
	tx     *sql.Tx
	writer messaging.Writer
}

func (h shipOrders) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		placed := message.(OrderPlaced)
		result, err := h.tx.ExecContext(ctx, "UPDATE orders SET status = 'shipped' WHERE id = ? AND status = 'placed'", placed.OrderID)
		if err != nil {
			panic(err) // retry recovers it and runs the batch again in a new transaction
		}
		if n, _ := result.RowsAffected(); n == 0 {
			continue // a redelivery of an order already shipped
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Message: OrderShipped{OrderID: placed.OrderID}}); err != nil {
			panic(err)
		}
	}
}

// Example_consuming wires the whole stack in its one order — transport ->
// outbox -> serialization -> transactional -> retry -> deadletter ->
// streaming — on the in-memory broker and SQLite, places an order, and waits
// for it to be shipped and the shipment recorded.
func Example_consuming() {
	db, cleanup, err := openSQLite()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	// 1. The transport (memory.New() in tests; rabbitmq.New(...) in production).
	transport := memory.New()
	defer transport.Close()

	// 2. The outbox wraps the raw transport: a Connector whose CommitWriter
	//    stores rows in your SQL transaction, and the dispatcher that publishes
	//    the committed rows.
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.SQLite),
		sqlmq.Options.Logger(quiet),
	)

	// 3. Serialization wraps each side separately: the transport for reading
	//    (decode) and the outbox for writing (encode before the row is stored).
	readTypes := map[string]reflect.Type{
		"order-placed":  reflect.TypeOf(OrderPlaced{}),
		"order-shipped": reflect.TypeOf(OrderShipped{}),
	}
	writeTypes := map[reflect.Type]string{
		reflect.TypeOf(OrderPlaced{}):  "order-placed",
		reflect.TypeOf(OrderShipped{}): "order-shipped",
	}
	encodedTransport := serialization.New(transport, serialization.Options.ReadTypes(readTypes), serialization.Options.Logger(quiet))
	encodedOutbox := serialization.New(outbox, serialization.Options.WriteTypes(writeTypes), serialization.Options.Logger(quiet))

	// 4. Handlers: one SQL transaction per batch (transactional) and retry
	//    around it. The budget is stated once.
	budget := retrypolicy.Fixed(3, 10*time.Millisecond)
	shipper := retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return shipOrders{tx: state.Tx, writer: state.Writer}
		}, transactional.Options.Logger(quiet)),
		retry.Options.Policy(budget),
		retry.Options.Logger(quiet),
	)
	recorded := make(chan string, 1)
	recorder := retry.New(
		sqltx.New(db, func(tx *sql.Tx) messaging.Handler {
			return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
				for _, message := range messages {
					shipped := message.(OrderShipped)
					if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO shipments (order_id) VALUES (?)", shipped.OrderID); err != nil {
						panic(err)
					}
					recorded <- shipped.OrderID
				}
			})
		}, sqltx.Options.Logger(quiet)),
		retry.Options.Policy(budget),
		retry.Options.Logger(quiet),
	)

	// 5. The consumer reads decoded deliveries and feeds the handlers; the
	//    settlement around them, outermost, is the consumer's, stated per
	//    subscription with the same budget.
	settlement := streaming.SubscriptionOptions.Settlement(deadletter.Options.Policy(budget))
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription("orders.ship",
				streaming.SubscriptionOptions.Topics("order-placed"),
				streaming.SubscriptionOptions.AddWorkers(shipper),
				settlement,
			),
			streaming.NewSubscription("orders.shipped-log",
				streaming.SubscriptionOptions.Topics("order-shipped"),
				streaming.SubscriptionOptions.AddWorkers(recorder),
				settlement,
			),
		),
		streaming.Options.Logger(quiet),
	)

	// The subscriptions declare their exchanges when their streams open; in
	// this example declare them up front (with the same properties), so the
	// first publish cannot race the consumer's start.
	for _, topology := range [][2]string{{"order-placed", "orders.ship"}, {"order-shipped", "orders.shipped-log"}} {
		_ = transport.DeclareExchange(topology[0], memory.KindFanout, true)
		_ = transport.DeclareQueue(topology[1], memory.QueueOptions{Durable: true})
		_ = transport.Bind(topology[1], topology[0], "")
	}

	go dispatcher.Listen()
	go consumer.Listen()

	// Place an order: the order row and its order-placed message commit in
	// one SQL transaction, through the encoded outbox.
	ctx, slot := messaging.WithTransactionSlot(context.Background())
	connection, err := encodedOutbox.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := slot.Tx.ExecContext(ctx, "INSERT INTO orders (id, item, status) VALUES ('o-1', 'book', 'placed')"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := writer.Write(ctx, messaging.Dispatch{Message: OrderPlaced{OrderID: "o-1", Item: "book"}}); err != nil {
		fmt.Println(err)
		return
	}
	if err := writer.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	_ = connection.Close()

	orderID, err := await(recorded, "the shipment")
	if err != nil {
		fmt.Println(err)
		return
	}
	var status string
	_ = db.QueryRow("SELECT status FROM orders WHERE id = ?", orderID).Scan(&status)
	fmt.Println("recorded shipment of", orderID)
	fmt.Println("order status:", status)

	// Shutdown in order: the consumer first, then the dispatcher.
	_ = consumer.Close()
	_ = dispatcher.Close()
	fmt.Println("undelivered on orders.ship:", transport.MessageCount("orders.ship"))

	// Output:
	// recorded shipment of o-1
	// order status: shipped
	// undelivered on orders.ship: 0
}
