package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/console"
	"github.com/warrenmq/messaging/memory"
)

// A console over an in-memory broker, mounted under /ops/console/: the
// dead-letter queue's page groups its three messages into two reasons.
func Example() {
	broker := memory.New()
	defer broker.Close()
	for _, queue := range []string{"orders.ship", "orders.ship.dlq", "orders.ship.parked"} {
		_ = broker.DeclareQueue(queue, memory.QueueOptions{Durable: true})
	}
	for i, reason := range []string{"exhausted 5 attempts: payment service 503", "exhausted 5 attempts: payment service 500", "card declined"} {
		_ = broker.Publish(context.Background(), messaging.Dispatch{RoutingKey: "orders.ship.dlq", MessageID: fmt.Sprint("m", i), Error: reason, Mandatory: true})
	}
	c := console.New(
		console.Options.Connector(broker),
		console.Options.Queues("orders.ship"),
		console.Options.MountPath("/ops/console/"),
	)
	defer c.Close()

	page := httptest.NewRecorder()
	c.ServeHTTP(page, httptest.NewRequest("GET", "/ops/console/queues/orders.ship.dlq", nil))
	for _, line := range strings.Split(page.Body.String(), "\n") {
		if strings.Contains(line, `class="n count"`) || strings.Contains(line, `class="reason"`) {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	fmt.Println("still in orders.ship.dlq:", broker.MessageCount("orders.ship.dlq"))
	// Output:
	// <td class="n count">2</td>
	// <td><a class="reason" href="/ops/console/queues/orders.ship.dlq/groups/908afa7be9cc9ce2">exhausted # attempts: payment service #</a><div class="example">e.g. exhausted 5 attempts: payment service 503</div></td>
	// <td class="n count">1</td>
	// <td><a class="reason" href="/ops/console/queues/orders.ship.dlq/groups/f00833c68252a47a">card declined</a><div class="example">e.g. card declined</div></td>
	// still in orders.ship.dlq: 3
}
