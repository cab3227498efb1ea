package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/warrenmq/messaging"
)

// scriptedDeclarer records each step and refuses the exchanges named in
// refuse as differing from what exists.
type scriptedDeclarer struct {
	refuse map[string]bool
	failOn string
	steps  []string
}

func (d *scriptedDeclarer) Exchange(x messaging.Exchange, unbound string) (bool, error) {
	if d.refuse[x.Name] {
		d.steps = append(d.steps, "refused exchange "+x.Name+unbound)
		return false, nil
	}
	d.steps = append(d.steps, "exchange "+x.Name+" "+string(x.Kind))
	return true, nil
}

func (d *scriptedDeclarer) Queue(q messaging.Queue) error {
	d.steps = append(d.steps, "queue "+q.Name)
	if q.Name == d.failOn {
		return errors.New("refused")
	}
	return nil
}

func (d *scriptedDeclarer) Bind(b messaging.Binding) error {
	d.steps = append(d.steps, "bind "+b.Exchange+" -> "+b.Queue+" ("+b.Key+")")
	return nil
}

func stream() messaging.StreamConfig {
	return messaging.StreamConfig{
		StreamName: "orders.new", EstablishTopology: true, DeadLetters: true, Topics: []string{"orders"},
		Bindings: []messaging.StreamBinding{{Exchange: "audit", Key: "order.*"}},
	}
}

func TestAStreamDeclaresExchangesThenQueuesThenBindings(t *testing.T) {
	steps, err := TopologyOf(stream())
	if err != nil {
		t.Fatal(err)
	}
	d := &scriptedDeclarer{}
	if err := steps.Declare(d); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"exchange orders fanout", "exchange audit topic", "exchange acemq.dlx direct",
		"queue orders.new", "queue orders.new.dlq", "queue orders.new.parked",
		"bind orders -> orders.new ()", "bind audit -> orders.new (order.*)",
		"bind acemq.dlx -> orders.new.dlq (orders.new.dlq)", "bind acemq.dlx -> orders.new.parked (orders.new.parked)",
	}
	if !reflect.DeepEqual(d.steps, want) {
		t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(d.steps, "\n"), strings.Join(want, "\n"))
	}
}

func TestNothingIsBoundToARefusedExchangeAndTheWarningSaysWhat(t *testing.T) {
	steps, _ := TopologyOf(stream())
	d := &scriptedDeclarer{refuse: map[string]bool{"audit": true, DeadLetterExchange: true}}
	if err := steps.Declare(d); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(d.steps, "\n")
	for _, want := range []string{
		`refused exchange audit, and queue "orders.new" is not bound to it with key "order.*"`,
		"refused exchange acemq.dlx, and nothing is bound to it",
		"queue orders.new.dlq",
		"bind orders -> orders.new ()",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("steps lack %q:\n%s", want, joined)
		}
	}
	for _, unwanted := range []string{"bind audit", "bind acemq.dlx"} {
		if strings.Contains(joined, unwanted) {
			t.Errorf("steps bound to a refused exchange (%q):\n%s", unwanted, joined)
		}
	}
}

func TestTheFirstFailureStopsTheDeclaration(t *testing.T) {
	steps, _ := TopologyOf(stream())
	d := &scriptedDeclarer{failOn: "orders.new"}
	if err := steps.Declare(d); err == nil || d.steps[len(d.steps)-1] != "queue orders.new" {
		t.Fatalf("Declare = %v after %v; want the queue's error, and nothing after it", err, d.steps)
	}
}

func TestWithoutTopologyOrDeadLettersAStreamDeclaresNothing(t *testing.T) {
	steps, err := TopologyOf(messaging.StreamConfig{StreamName: "q"})
	if err != nil || len(steps.Exchanges)+len(steps.Queues)+len(steps.Bindings) != 0 {
		t.Fatalf("TopologyOf = %+v, %v; want nothing to declare", steps, err)
	}
}
