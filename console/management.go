package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/warrenmq/messaging/internal/redact"
)

// The bounds of a management API listing.
const (
	managementTimeout = 3 * time.Second
	managementBody    = 16 << 20
	managementQueues  = 5000
)

// management is RabbitMQ's management HTTP API, used only for what AMQP
// cannot tell: which queues a virtual host has.
type management struct {
	address string
	vhost   string
}

// listedQueue is one queue of the listing.
type listedQueue struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Messages  int    `json:"messages_ready"`
	Consumers int    `json:"consumers"`
}

// list asks the API for the vhost's queues, bounded in time and size.
func (m management) list(ctx context.Context) ([]listedQueue, error) {
	base, err := url.Parse(strings.TrimRight(m.address, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("the management address %s is not a URL like http://user:password@host:15672", redact.Address(m.address))
	}
	user := base.User
	base.User = nil
	vhost := m.vhost
	if vhost == "" {
		vhost = "/"
	}
	target := base.String() + "/api/queues/" + url.PathEscape(vhost) + "?columns=name,type,messages_ready,consumers"
	ctx, cancel := context.WithTimeout(ctx, managementTimeout)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("ask the management API at %s: %w", base.Redacted(), err)
	}
	if user != nil {
		password, _ := user.Password()
		request.SetBasicAuth(user.Username(), password)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		var failed *url.Error
		if errors.As(err, &failed) {
			err = failed.Err // its text repeats the address, query and all
		}
		return nil, fmt.Errorf("no answer from the management API at %s: %w", base.Redacted(), err)
	}
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the management API at %s answered %s to the queue listing (is the user allowed to monitor the vhost %q?)", base.Redacted(), response.Status, vhost)
	}
	var queues []listedQueue
	if err := json.NewDecoder(io.LimitReader(response.Body, managementBody)).Decode(&queues); err != nil {
		return nil, fmt.Errorf("read the management API's queue listing: %w", err)
	}
	if len(queues) > managementQueues {
		queues = queues[:managementQueues]
	}
	return queues, nil
}
