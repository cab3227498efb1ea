package rabbitmq_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// authority is a certificate authority made at test time; nothing of it is
// committed.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(t *testing.T, name string) authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate for commonName (a server's certificate also
// names 127.0.0.1 and localhost) and returns its PEM and its key's PEM.
func (a authority) issue(t *testing.T, commonName string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		template.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		template.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func (a authority) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(a.cert)
	return pool
}

// TestTLS starts a node with only an amqps listener and checks, in turn, a
// confirmed round trip with the server verified, a wrong CA refused at
// connect, and EXTERNAL authentication by client certificate.
func TestTLS(t *testing.T) {
	ca := newAuthority(t, "warrenmq test CA")
	serverCert, serverKey := ca.issue(t, "localhost", true)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	testenv.TLSBroker(t, testenv.TLSFiles{
		CA:          write("ca.pem", ca.pem),
		Certificate: write("server.pem", serverCert),
		Key:         write("server.key", serverKey),
	})
	address := fmt.Sprintf("amqps://guest:guest@127.0.0.1:%d/", testenv.TLSPort)

	t.Run("a confirmed round trip with the server verified", func(t *testing.T) {
		connector := rabbitmq.New(rabbitmq.Options.Address(address),
			rabbitmq.Options.TLS(&tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}),
			rabbitmq.Options.BrokerTimeout(10*time.Second))
		defer func() { _ = connector.Close() }()
		roundTrip(t, connector)
	})

	t.Run("a certificate from another CA is refused at connect", func(t *testing.T) {
		other := newAuthority(t, "someone else's CA")
		connector := rabbitmq.New(rabbitmq.Options.Address(address),
			rabbitmq.Options.TLS(&tls.Config{RootCAs: other.pool(), MinVersion: tls.VersionTLS12}),
			rabbitmq.Options.BrokerTimeout(10*time.Second))
		defer func() { _ = connector.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, err := connector.Connect(ctx)
		var unknown x509.UnknownAuthorityError
		if err == nil || !errors.As(err, &unknown) {
			t.Fatalf("connect with the wrong CA: %v; want an x509.UnknownAuthorityError in the chain", err)
		}
		if !strings.Contains(err.Error(), "certificate signed by unknown authority") || strings.Contains(err.Error(), "guest:guest") {
			t.Fatalf("the error must say the certificate could not be verified, without the password: %v", err)
		}
	})

	t.Run("EXTERNAL authentication by client certificate", func(t *testing.T) {
		const user = "warrenmq-tls-client"
		testenv.TLSNodeCtl(t, "add_user", user, messaging.NewID())
		testenv.TLSNodeCtl(t, "clear_password", user)
		testenv.TLSNodeCtl(t, "set_permissions", "-p", "/", user, ".*", ".*", ".*")
		clientCert, clientKey := ca.issue(t, user, false)
		pair, err := tls.X509KeyPair(clientCert, clientKey)
		if err != nil {
			t.Fatal(err)
		}
		connector := rabbitmq.New(
			rabbitmq.Options.Address(fmt.Sprintf("amqps://127.0.0.1:%d/?auth_mechanism=external", testenv.TLSPort)),
			rabbitmq.Options.TLS(&tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}),
			rabbitmq.Options.BrokerTimeout(10*time.Second))
		defer func() { _ = connector.Close() }()
		roundTrip(t, connector)
		if out := testenv.TLSNodeCtl(t, "-q", "list_connections", "user", "auth_mechanism", "ssl"); !strings.Contains(out, user) || !strings.Contains(out, "EXTERNAL") {
			t.Fatalf("the broker does not list a connection of %s by EXTERNAL over TLS:\n%s", user, out)
		}
	})
}

// roundTrip declares a queue, publishes one confirmed mandatory message to it
// and reads it back, all through connector.
func roundTrip(t *testing.T, connector messaging.Connector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect over TLS: %v", err)
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		t.Fatal("the connection declares nothing")
	}
	queue := testenv.Name(t, "tls")
	if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: queue, AutoDelete: true}); err != nil {
		t.Fatalf("declare over TLS: %v", err)
	}
	writer, err := conn.CommitWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Close() }()
	if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, MessageID: "over-tls", Mandatory: true, Payload: []byte("sealed")}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatalf("confirm over TLS: %v", err)
	}
	reader, err := conn.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Close() }()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, EstablishTopology: false})
	if err != nil {
		t.Fatalf("consume over TLS: %v", err)
	}
	defer func() { _ = stream.Close() }()
	var delivery messaging.Delivery
	if err := stream.Read(ctx, &delivery); err != nil {
		t.Fatalf("read over TLS: %v", err)
	}
	if delivery.MessageID != "over-tls" || string(delivery.Payload) != "sealed" {
		t.Fatalf("read %q %q", delivery.MessageID, delivery.Payload)
	}
	if err := stream.Acknowledge(ctx, delivery); err != nil {
		t.Fatal(err)
	}
}
