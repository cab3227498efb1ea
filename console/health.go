package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/status"
)

// statusBody bounds a service's /status answer.
const statusBody = 1 << 20

// Checkpoint is a stream reader's saved position, as a projection keeps it:
// the offset it reads next.
type Checkpoint struct {
	Name       string
	NextOffset uint64
}

// serviceView is one service's /status report.
type serviceView struct {
	Address string
	Code    int
	Report  status.Report
	Err     string
}

// streamView is one stream's length.
type streamView struct {
	Name      string
	Messages  int
	Consumers int
	Missing   bool
	Err       string
}

// askService fetches address's report within ctx.
func (c *Console) askService(ctx context.Context, address string) serviceView {
	v := serviceView{Address: c.redact(redact.Address(address))}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		v.Err = c.redactErr(fmt.Errorf("the service address is not a URL: %w", err))
		return v
	}
	request.Header.Set("Accept", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		v.Err = c.redactErr(fmt.Errorf("the service did not answer: %w", err))
		return v
	}
	defer func() { _ = response.Body.Close() }()
	v.Code = response.StatusCode
	if err := json.NewDecoder(io.LimitReader(response.Body, statusBody)).Decode(&v.Report); err != nil || v.Report.Status == "" {
		v.Err = fmt.Sprintf("answered %s without a status report (is this its /status address?)", response.Status)
		return v
	}
	v.Report.Status = c.redact(v.Report.Status)
	for i := range v.Report.Checks {
		v.Report.Checks[i].Error = c.redact(v.Report.Checks[i].Error)
	}
	return v
}

// streamLength reads one stream's length (its messages, as the broker
// counts them) and consumers.
func (c *Console) streamLength(ctx context.Context, name string) streamView {
	state, err := await(c, ctx, "the stream "+name, func(ctx context.Context) (messaging.QueueState, error) {
		return c.inspect(ctx, name)
	})
	switch {
	case errors.Is(err, messaging.ErrNotFound):
		return streamView{Name: name, Missing: true}
	case err != nil:
		return streamView{Name: name, Err: c.redactErr(err)}
	}
	return streamView{Name: name, Messages: state.Messages, Consumers: state.Consumers}
}
