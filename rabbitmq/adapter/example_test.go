package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// refusingDialer is a hand-written fake: it shows what the transport asks
// to dial, and answers the first node with a refused socket and the second
// with a refusal of the credentials.
type refusingDialer struct{ dialled int }

func (d *refusingDialer) Dial(_ context.Context, address string, config amqp.Config) (adapter.Connection, error) {
	d.dialled++
	node := "?"
	if u, err := url.Parse(address); err == nil {
		node = u.Host // never print the address itself: it carries the password
	}
	fmt.Printf("dial %s (heartbeat %s, connection name %v)\n", node, config.Heartbeat, config.Properties["connection_name"])
	if d.dialled == 1 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return nil, &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN"}
}

// A test gives the transport a fake Dialer through rabbitmq.Options.Dialer:
// here, a cluster whose first node is down and whose second refuses the
// credentials. The transport goes on to the next node after the refused
// socket, and stops at the refusal no other node would answer differently.
func Example() {
	dialer := &refusingDialer{}
	transport := rabbitmq.New(
		rabbitmq.Options.Addresses("amqp://billing:s3cret@rabbit-1:5672/", "amqp://billing:s3cret@rabbit-2:5672/"),
		rabbitmq.Options.ConnectionName("billing"),
		rabbitmq.Options.Heartbeat(5*time.Second),
		rabbitmq.Options.Dialer(dialer),
		rabbitmq.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	defer transport.Close()

	_, err := transport.Connect(context.Background())
	fmt.Println(err)
	fmt.Println("access refused:", errors.Is(err, messaging.ErrAccessRefused), "permanent:", messaging.IsPermanent(err))
	fmt.Println("dials:", dialer.dialled)
	// Output:
	// dial rabbit-1:5672 (heartbeat 5s, connection name billing)
	// dial rabbit-2:5672 (heartbeat 5s, connection name billing)
	// the broker at amqp://billing:xxxxx@rabbit-2:5672/ refused the credentials (403 ACCESS_REFUSED: ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN); check the user name and password in the address: messaging: connect: the broker refused it (403): ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN
	// access refused: true permanent: true
	// dials: 2
}
