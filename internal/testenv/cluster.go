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
func StartClusterNode(t testing.TB) {
	t.Helper()
	if err := clusterScript(t, 5*time.Minute, "start"); err != nil {
		t.Fatalf("restart the test cluster's stopped node: %v", err)
	}
}

// ClusterNodePID returns the operating system process id of a cluster node,
// read from the pid file scripts/cluster.sh makes the node write.
func ClusterNodePID(t testing.TB, node string) int {
	t.Helper()
	short, _, _ := strings.Cut(node, "@")
	dir := os.Getenv("CLUSTER_DIR")
	if dir == "" {
		dir = "/var/tmp/warrenmq-cluster"
	}
	raw, err := os.ReadFile(filepath.Join(dir, short, "pid"))
	if err != nil {
		t.Fatalf("read the pid of cluster node %s: %v", node, err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &pid); err != nil {
		t.Fatalf("the pid file of cluster node %s holds %q: %v", node, raw, err)
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
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "cluster.sh"), command).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
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
