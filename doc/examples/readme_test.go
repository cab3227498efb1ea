package examples_test

import (
	"context"
	"database/sql"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// OrderAccepted is the README's message.
type OrderAccepted struct{ ID int }

// readmeNames are the names the README uses, made unique per run.
type readmeNames struct{ queue, topic, table string }

// readmeService is what the quick start builds, for the test to drive.
type readmeService struct {
	place    func(ctx context.Context, id int) error
	consumer *streaming.Consumer
	stop     func()
}

// quickStart is the README's quick start, between the markers; the test below
// checks that README.md shows exactly these lines. db, address, ship and
// saveOrder are the service's own.
func quickStart(ctx context.Context, db *sql.DB, address string, names readmeNames,
	ship func(context.Context, int) error, saveOrder func(context.Context, *sql.Tx, int) error) (readmeService, error) {
	queue, topic, table := names.queue, names.topic, names.table
	var service readmeService
	build := func() error {
		// readme:begin
		transport := rabbitmq.New(rabbitmq.Options.Address(address))
		outbox, relay := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(table))
		if err := sqlmq.CreateSchema(ctx, db, sqldialect.MySQL, table); err != nil {
			return err
		}
		placed := reflect.TypeFor[OrderAccepted]()
		consuming := serialization.New(transport, serialization.Options.ReadTypes(map[string]reflect.Type{topic: placed}))
		publishing := serialization.New(outbox, serialization.Options.WriteTypes(map[reflect.Type]string{placed: topic}))

		// A typed handler: an error marked Fatal is dead-lettered at once, an
		// outage holds the message, any other error spends the retry budget.
		handler := messaging.HandleEach(func(ctx context.Context, order OrderAccepted) error {
			if order.ID <= 0 {
				return messaging.Fatalf("order %d has no valid id", order.ID)
			}
			return ship(ctx, order.ID)
		})
		budget := retrypolicy.Exponential(5, time.Second, 30*time.Second) // stated once
		consumer := streaming.New(consuming, streaming.Options.Subscriptions(
			streaming.NewSubscription(queue,
				streaming.SubscriptionOptions.Topics(topic),
				streaming.SubscriptionOptions.AddWorkers(retry.New(handler, retry.Options.Policy(budget))),
				streaming.SubscriptionOptions.Settlement(deadletter.Options.Policy(budget)), // {queue}.dlq, {queue}.parked
			),
		))
		go relay.Listen()
		go consumer.Listen()

		// Publish in your own SQL transaction: the message is stored with your
		// rows and published, confirmed, once the transaction commits.
		place := func(ctx context.Context, id int) error {
			ctx, slot := messaging.WithTransactionSlot(ctx)
			connection, err := publishing.Connect(ctx)
			if err != nil {
				return err
			}
			defer connection.Close()
			writer, err := connection.CommitWriter(ctx)
			if err != nil {
				return err
			}
			defer writer.Close()
			if err := saveOrder(ctx, slot.Tx, id); err != nil {
				_ = writer.Rollback()
				return err
			}
			if _, err := writer.Write(ctx, messaging.Dispatch{Message: OrderAccepted{ID: id}}); err != nil {
				_ = writer.Rollback()
				return err
			}
			return writer.Commit()
		}
		// readme:end
		stop := func() { _ = consumer.Close(); _ = relay.Close(); _ = transport.Close() }
		service = readmeService{place: place, consumer: consumer, stop: stop}
		return nil
	}
	return service, build()
}

// TestTheReadmeQuickStartShipsAnOrder runs the README's quick start on the
// local RabbitMQ and MariaDB: an order placed in a transaction is shipped by
// the typed handler, and one without a valid id is dead-lettered at once.
func TestTheReadmeQuickStartShipsAnOrder(t *testing.T) {
	address := testenv.Broker(t)
	db := testenv.MySQL(t)
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	names := readmeNames{queue: "readme-orders-" + suffix, topic: "readme-order-placed-" + suffix, table: "readme_outbox_" + suffix}
	orders := "readme_orders_" + suffix
	mustExec(t, db, "CREATE TABLE "+orders+" (id bigint NOT NULL PRIMARY KEY)")
	t.Cleanup(func() {
		_, _ = db.Exec("DROP TABLE IF EXISTS " + orders)
		_, _ = db.Exec("DROP TABLE IF EXISTS " + names.table)
		_ = testenv.DeleteTopology(address, []string{names.topic}, names.queue, names.queue+".dlq", names.queue+".parked")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shipped := make(chan int, 4)
	saveOrder := func(ctx context.Context, tx *sql.Tx, id int) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO "+orders+" (id) VALUES (?)", id)
		return err
	}
	service, err := quickStart(ctx, db, address, names, func(_ context.Context, id int) error {
		shipped <- id
		return nil
	}, saveOrder)
	if err != nil {
		t.Fatal(err)
	}
	defer service.stop()
	if err := service.consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{42, -1} {
		if err := service.place(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case id := <-shipped:
		if id != 42 {
			t.Fatalf("shipped order %d, want 42", id)
		}
	case <-ctx.Done():
		t.Fatal("order 42 was not shipped within a minute")
	}
	raw := rawBroker(t, address)
	body := raw.receive(t, names.queue+".dlq", 30*time.Second)
	if !strings.Contains(string(body), "-1") {
		t.Fatalf("the order without a valid id was not dead-lettered: %q", body)
	}
}

// TestTheReadmeShowsTheQuickStart fails when README.md's quick start and the
// code above drift apart.
func TestTheReadmeShowsTheQuickStart(t *testing.T) {
	source, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(source), "\n")
	begin, end := -1, -1
	for i, line := range lines {
		switch strings.TrimSpace(line) {
		case "// readme:" + "begin":
			begin = i
		case "// readme:" + "end":
			end = i
		}
	}
	if begin < 0 || end < begin {
		t.Fatal("the readme markers are missing from readme_test.go")
	}
	indent := lines[begin][:len(lines[begin])-len(strings.TrimLeft(lines[begin], "\t"))]
	var snippet strings.Builder
	for _, line := range lines[begin+1 : end] {
		snippet.WriteString(strings.TrimPrefix(line, indent))
		snippet.WriteString("\n")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimRight(snippet.String(), "\n"); !strings.Contains(string(readme), want) {
		t.Fatalf("README.md does not show the quick start as readme_test.go has it; put this in its quick start:\n%s", want)
	}
}
