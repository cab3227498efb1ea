package faults

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// The cluster scenarios run a publisher and a consumer on a quorum queue of
// the three-node test cluster (scripts/cluster.sh), both given every node's
// address, and take away a node mid-run: the one they are connected to
// (stop_app, then start_app), or the one leading the queue (its process
// killed, then started again). Every confirmed message must be handled;
// duplicates are counted, and so is the time from the fault until a publish
// was confirmed again.

// Scenario: the node the publisher and the consumer are connected to stops.
func TestFaultClusterConnectedNodeStops(t *testing.T) {
	addresses := testenv.Cluster(t)
	node := testenv.ClusterNodes[0] // both dial the first address first
	clusterScenario(t, addresses, "cluster-node-stopped", size(2_000, 20_000),
		func(ctx context.Context, _ string) error {
			_, err := rabbitmqctl(ctx, "-n", node, "stop_app")
			return err
		},
		func(ctx context.Context, _ string) error {
			_, err := rabbitmqctl(ctx, "-n", node, "start_app")
			return err
		})
}

// Scenario: the process of the node leading the queue is killed.
func TestFaultClusterLeaderKilled(t *testing.T) {
	if !*full {
		t.Skip("the leader-kill scenario runs in make faults (-faults.full); make test runs the node-stopped one")
	}
	addresses := testenv.Cluster(t)
	var leader string
	clusterScenario(t, addresses, "cluster-leader-killed", 20_000,
		func(ctx context.Context, queue string) error {
			leader = queueLeader(ctx, t, queue)
			return syscall.Kill(testenv.ClusterNodePID(t, leader), syscall.SIGKILL)
		},
		func(context.Context, string) error { return testenv.StartClusterNode(t) })
	t.Logf("killed the leader %s", leader)
}

// queueLeader asks a node that is not going away which node leads queue.
func queueLeader(ctx context.Context, t *testing.T, queue string) string {
	out, err := rabbitmqctl(ctx, "-n", testenv.ClusterNodes[2], "-q", "list_queues", "name", "leader", "--no-table-headers")
	if err != nil {
		t.Fatalf("find the queue's leader: %v", err)
	}
	var name, leader string
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscan(line, &name, &leader); err == nil && name == queue {
			return leader
		}
	}
	t.Fatalf("queue %s not listed with a leader:\n%s", queue, out)
	return ""
}

func abs(n int64) int64 { return max(n, -n) }

func clusterTransport(t *testing.T, addresses []string, name string) messaging.Connector {
	return rabbitmq.New(
		rabbitmq.Options.Addresses(addresses...),
		rabbitmq.Options.ConnectionName(name),
		rabbitmq.Options.BrokerTimeout(brokerTimeout),
		rabbitmq.Options.Logger(logger(t)),
	)
}

// clusterScenario publishes n messages in calls of 100 while a consumer
// handles them; after a third is confirmed it runs fault, after two thirds
// repair, and then waits for every confirmed message to be handled.
func clusterScenario(t *testing.T, addresses []string, scenario string, n int, fault, repair func(ctx context.Context, queue string) error) {
	queue := testenv.Name(t, scenario)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = rabbitmqctl(ctx, "-n", testenv.ClusterNodes[1], "delete_queue", queue)
	})
	exchange := queue + "-ex"
	connName := testenv.Name(t, "conn")
	started := time.Now()
	tl := newTally()

	types := map[reflect.Type]string{reflect.TypeOf(faultMessage{}): faultMessageType}
	consumerConnector := serialization.New(clusterTransport(t, addresses, connName),
		serialization.Options.ReadTypes(map[string]reflect.Type{faultMessageType: reflect.TypeOf(faultMessage{})}))
	defer func() { _ = consumerConnector.Close() }()
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, m := range messages {
			tl.handle(m.(faultMessage).ID)
		}
		work(time.Duration(len(messages)) * time.Millisecond) // paced, so the fault lands mid-run
	}), retry.Options.Backoff(50*time.Millisecond), retry.Options.Logger(logger(t)))
	consumer := streaming.New(consumerConnector,
		streaming.Options.Logger(logger(t)),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.StreamReplication(true), // a quorum queue
			streaming.SubscriptionOptions.DeadLetters(false),
			streaming.SubscriptionOptions.AddWorkers(handler),
			streaming.SubscriptionOptions.BufferCapacity(500),
			streaming.SubscriptionOptions.BatchCapacity(50),
			streaming.SubscriptionOptions.ReconnectDelay(200*time.Millisecond),
		)))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	startCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := consumer.Started(startCtx)
	cancel()
	if err != nil {
		t.Fatalf("the consumer did not open its quorum queue on the cluster: %v", err)
	}

	publisherConnector := serialization.New(clusterTransport(t, addresses, connName), serialization.Options.WriteTypes(types))
	defer func() { _ = publisherConnector.Close() }()
	writer := batch.New(publisherConnector)
	defer func() { _ = writer.Close() }()

	var faultAt, resumedAt atomic.Int64
	var faults sync.WaitGroup
	all := ids(n)
	failedCalls := 0
	for start := 0; start < n; {
		chunk := all[start:min(start+100, n)]
		tl.send(chunk...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := writer.Write(ctx, dispatches(exchange, chunk)...)
		cancel()
		if err != nil {
			// Not confirmed as a whole: send the same ids again, as a
			// service would; what had landed arrives twice (a duplicate,
			// counted), never lost.
			failedCalls++
			since := time.Since(time.Unix(0, abs(faultAt.Load())))
			if failedCalls <= 3 || failedCalls%50 == 0 {
				t.Logf("publish call failed %s after the fault: %v", since.Round(time.Millisecond), err)
			}
			if faultAt.Load() == 0 || since > 3*time.Minute {
				t.Fatalf("publishing did not resume: %v", err)
			}
			time.Sleep(100 * time.Millisecond) // real time: a service pauses before it sends again while the cluster fails over
			continue
		}
		tl.confirm(chunk...)
		if faultAt.Load() != 0 && resumedAt.Load() == 0 {
			resumedAt.Store(time.Now().UnixNano())
		}
		start += len(chunk)
		switch {
		case start >= n/3 && faultAt.Load() == 0:
			faultAt.Store(time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := fault(ctx, queue); err != nil {
				t.Fatalf("the fault did not happen: %v", err)
			}
			cancel()
		case start >= 2*n/3 && faultAt.Load() > 0: // once: faultAt turns negative below
			faults.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if err := repair(ctx, queue); err != nil {
					t.Errorf("the node did not come back: %v", err)
				}
			})
			faultAt.Store(-faultAt.Load()) // repaired once
		}
	}
	faults.Wait()
	done := testenv.Poll(size(2*time.Minute, 5*time.Minute), func() bool { return tl.missing() == 0 })
	if err := consumer.Close(); err != nil {
		t.Logf("close the consumer: %v", err)
	}
	<-listening
	if !done {
		t.Errorf("not every confirmed message was handled within the bound; %d missing", tl.missing())
	}
	resumed := time.Duration(resumedAt.Load() - abs(faultAt.Load()))
	t.Logf("%s: %d publish calls failed and were sent again; publishing resumed %s after the fault", scenario, failedCalls, resumed.Round(time.Millisecond))
	fmt.Printf("fault %s publishing resumed after %.1f s\n", scenario, resumed.Seconds())
	report(t, scenario, tl, started)
}
