package testenv

import (
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DeleteTopology deletes queues, then exchanges, on the broker at url: a
// test's cleanup. Each deletion gets a channel of its own, so one the broker
// refuses (and closes the channel for) does not leave the rest in place. A
// name that does not exist is not an error. It returns what could not be done.
func DeleteTopology(url string, exchanges []string, queues ...string) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return fmt.Errorf("clean up the test topology: %w", err)
	}
	defer conn.Close()
	var errs []error
	each := func(what string, f func(*amqp.Channel) error) {
		ch, err := conn.Channel()
		if err == nil {
			err = f(ch)
			_ = ch.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", what, err))
		}
	}
	for _, q := range queues {
		each("queue "+q, func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range exchanges {
		if x == "" {
			continue
		}
		each("exchange "+x, func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
	return errors.Join(errs...)
}
