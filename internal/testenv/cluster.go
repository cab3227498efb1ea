package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ClusterNodes are the node names scripts/cluster.sh starts, in the order of
// ClusterAddresses.
var ClusterNodes = []string{"c1@localhost", "c2@localhost", "c3@localhost"}

// ClusterAddresses are the AMQP addresses of the three cluster nodes.
var ClusterAddresses = []string{
	"amqp://guest:guest@127.0.0.1:5681/",
	"amqp://guest:guest@127.0.0.1:5682/",
	"amqp://guest:guest@127.0.0.1:5683/",
}

// Cluster holds the broker lock exclusively (a cluster on two cores disturbs
// every other broker test), starts the three-node cluster of
// scripts/cluster.sh unless it already runs, and returns its addresses. The
// cluster is stopped when the test ends if this call started it, so a machine
// is left as it was found. A cluster that cannot start fails the test with
// the script's account of why.
func Cluster(t testing.TB) []string {
	t.Helper()
	Disrupt(t)
	if clusterScript(t, 30*time.Second, "status") == nil {
		return ClusterAddresses
	}
	if err := clusterScript(t, 5*time.Minute, "start"); err != nil {
		t.Fatalf("the test cluster did not start (scripts/cluster.sh start): %v", err)
	}
	t.Cleanup(func() {
		if err := clusterScript(t, 2*time.Minute, "stop"); err != nil {
			t.Logf("stop the test cluster: %v", err)
		}
	})
	return ClusterAddresses
}

// StartClusterNode starts a stopped or killed cluster node again and waits
// until the three nodes run (scripts/cluster.sh start starts what is down).
// It returns an error rather than failing the test, so it can run on any
// goroutine.
func StartClusterNode(t testing.TB) error {
	if err := clusterScript(t, 5*time.Minute, "start"); err != nil {
		return fmt.Errorf("restart the test cluster's stopped node: %w", err)
	}
	return nil
}

// ClusterNodePID returns the operating system process id of a running
// cluster node, asked of the node itself.
func ClusterNodePID(t testing.TB, node string) int {
	t.Helper()
	out := Rabbitmqctl(t, "-n", node, "-q", "eval", "list_to_integer(os:getpid()).")
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &pid); err != nil || pid <= 1 {
		t.Fatalf("cluster node %s reported its process id as %q: %v", node, out, err)
	}
	return pid
}

func clusterScript(t testing.TB, bound time.Duration, command string) error {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// The output goes to a file, not a pipe: a node the script starts
	// detaches, and a pipe it might hold open would keep the wait going after
	// the script itself ended.
	out, err := os.CreateTemp("", "warrenmq-cluster-*.log")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(out.Name()) }()
	defer func() { _ = out.Close() }()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "cluster.sh"), command)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		text, _ := os.ReadFile(out.Name())
		return fmt.Errorf("%w\n%s", err, tail(string(text), 40))
	}
	return nil
}

// moduleRoot is the directory holding go.mod, above the test's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}
