package deadletter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

func TestDeclareRungsFixture(t *testing.T) {
	gunit.Run(new(DeclareRungsFixture), t)
}

type DeclareRungsFixture struct {
	*gunit.Fixture
	connector *fakeConnector
}

func (f *DeclareRungsFixture) Setup() {
	f.connector = &fakeConnector{declarer: true}
}

func (f *DeclareRungsFixture) declare(options ...Option) ([]string, error) {
	connection, err := f.connector.Connect(context.Background())
	f.So(err, should.BeNil)
	return f.declareOn(connection, options...)
}

func (f *DeclareRungsFixture) declareOn(connection messaging.Connection, options ...Option) ([]string, error) {
	rungs, err := DeclareRungs(context.Background(), connection, "orders", options...)
	var names []string
	for _, rung := range rungs {
		names = append(names, rung.Name)
	}
	return names, err
}

var ladderPolicy = retrypolicy.Exponential(6, 10*time.Second, 5*time.Minute)

func (f *DeclareRungsFixture) TestThePolicysLadderIsDeclaredShortestFirst() {
	names, err := f.declare(Options.Policy(ladderPolicy))
	f.So(err, should.BeNil)
	f.So(names, should.Equal, []string{"orders.retry.40s", "orders.retry.80s", "orders.retry.160s"})
	f.So(f.connector.declared, should.Equal, []string{
		"orders orders.retry.40s 40s", "orders orders.retry.80s 1m20s", "orders orders.retry.160s 2m40s",
	})
}

func (f *DeclareRungsFixture) TestThePolicysThresholdShapesTheLadder() {
	names, err := f.declare(Options.Policy(ladderPolicy.WaitInBrokerFrom(80 * time.Second)))
	f.So(err, should.BeNil)
	f.So(names, should.Equal, []string{"orders.retry.80s", "orders.retry.160s"})
}

func (f *DeclareRungsFixture) TestNothingIsDeclaredWhenNoWaitReachesTheBroker() {
	for _, options := range [][]Option{
		nil, // retrypolicy.Default: every wait is under 30 s
		{Options.Policy(ladderPolicy.WaitInBrokerFrom(0))},
		{Options.Policy(retrypolicy.Fixed(5, time.Second))},
		{Options.Policy(ladderPolicy), Options.RefuseRetry("a stream")},
	} {
		names, err := f.declare(options...)
		f.So(err, should.BeNil)
		f.So(names, should.BeEmpty)
	}
	f.So(f.connector.declared, should.BeEmpty)
}

func (f *DeclareRungsFixture) TestAConnectionThatCannotDeclareRungsDeclaresNothing() {
	f.connector.declarer = false
	names, err := f.declare(Options.Policy(ladderPolicy))
	f.So(err, should.BeNil)
	f.So(names, should.BeEmpty)
}

type wrappedConnection struct{ messaging.Connection }

func (w wrappedConnection) Unwrap() messaging.Connection { return w.Connection }

func (f *DeclareRungsFixture) TestADeclarerBeneathADecoratorIsFound() {
	connection, err := f.connector.Connect(context.Background())
	f.So(err, should.BeNil)
	names, err := f.declareOn(wrappedConnection{connection}, Options.Policy(ladderPolicy))
	f.So(err, should.BeNil)
	f.So(len(names), should.Equal, 3)
}

func (f *DeclareRungsFixture) TestAFailedDeclarationNamesTheRung() {
	f.connector.declareErr = errors.New("access refused")
	names, err := f.declare(Options.Policy(ladderPolicy))
	f.So(errors.Is(err, f.connector.declareErr), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, `"orders.retry.40s"`)
	f.So(names, should.BeEmpty)
}
