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

// TLSNode is the node TLSBroker starts.
const TLSNode = "tls@localhost"

// TLSPort is the amqps port of TLSNode.
const TLSPort = 5691

// TLSFiles are the PEM files a TLS broker is started with.
type TLSFiles struct {
	CA, Certificate, Key string
}

// TLSBroker holds the broker lock exclusively and starts TLSNode, a RabbitMQ
// node beside the default one with only an amqps listener on 127.0.0.1:TLSPort
// (its own config, data, log and feature-flags files), verifying client
// certificates against files.CA when a client presents one, and offering the
// PLAIN and EXTERNAL mechanisms (EXTERNAL takes the user name from the client
// certificate's common name). The node is stopped and its files deleted when
// the test ends. It fails the test, saying why, when the node cannot start.
func TLSBroker(t testing.TB, files TLSFiles) {
	t.Helper()
	Disrupt(t)
	dir := tlsNodeFiles(t, files)
	startTLSNode(t, dir)
	awaitTLSNode(t, dir)
}

// tlsNodeFiles writes the TLS node's PEM files, config and plugins into a
// directory of its own, deleted when the test ends, and returns it.
func tlsNodeFiles(t testing.TB, files TLSFiles) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "warrenmq-tls-node-")
	if err != nil {
		t.Fatalf("make the TLS node's directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pem := filepath.Join(dir, "pem")
	if err := os.MkdirAll(pem, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, from := range map[string]string{"ca.pem": files.CA, "server.pem": files.Certificate, "server.key": files.Key} {
		raw, err := os.ReadFile(from)
		if err != nil {
			t.Fatalf("read %s: %v", from, err)
		}
		if err := os.WriteFile(filepath.Join(pem, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(`listeners.tcp = none
listeners.ssl.default = 127.0.0.1:%d
ssl_options.cacertfile = %[2]s/ca.pem
ssl_options.certfile = %[2]s/server.pem
ssl_options.keyfile = %[2]s/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = EXTERNAL
ssl_cert_login_from = common_name
loopback_users = none
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
`, TLSPort, pem)
	must := func(err error) {
		if err != nil {
			t.Fatalf("prepare the TLS node: %v", err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte(config), 0o644))
	must(os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[rabbitmq_auth_mechanism_ssl].\n"), 0o644))
	must(exec.Command("chown", "-R", "rabbitmq:rabbitmq", dir).Run())
	must(os.Chmod(dir, 0o755))
	return dir
}

// startTLSNode starts TLSNode detached over the files in dir, and stops it
// when the test ends.
func startTLSNode(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("rabbitmq-server", "-detached")
	cmd.Env = append(os.Environ(),
		"RABBITMQ_NODENAME="+TLSNode,
		"RABBITMQ_NODE_PORT=5690", // the node's base port; no plain listener is opened
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", TLSPort+20000),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_FEATURE_FLAGS_FILE="+filepath.Join(dir, "feature_flags"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(dir, "plugins-expand"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "pid"),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=+S 1:1 +sbwt none",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start the TLS node: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, "rabbitmqctl", "-q", "-n", TLSNode, "stop").Run()
	})
}

// awaitTLSNode waits, up to 3 minutes, for TLSNode to have started, failing
// the test with the node's last log lines when it has not.
func awaitTLSNode(t testing.TB, dir string) {
	t.Helper()
	// await_startup fails at once until the node has registered with epmd,
	// so it is asked again, once a second, until the bound.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "rabbitmqctl", "-q", "-n", TLSNode, "await_startup").CombinedOutput()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(dir, "log", TLSNode+".log"))
			t.Fatalf("the TLS node did not start within 3 minutes: %v\n%s\n%s", err, out, tail(string(logs), 40))
		}
		time.Sleep(time.Second)
	}
}

// TLSNodeCtl runs rabbitmqctl against TLSNode (bounded to a minute), failing
// the test when it fails.
func TLSNodeCtl(t testing.TB, args ...string) string {
	t.Helper()
	return Rabbitmqctl(t, append([]string{"-n", TLSNode}, args...)...)
}

func tail(text string, lines int) string {
	all := strings.Split(text, "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
