package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// testCA signs route certificates for a test cluster, or for an outsider.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
}

func writePEM(t *testing.T, path, typ string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, file: writePEM(t, filepath.Join(dir, name+"-ca.pem"), "CERTIFICATE", der)}
}

// issue writes a certificate for 127.0.0.1 and localhost, good as server
// and client, and its key; it returns their paths.
func (ca *testCA) issue(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der), writePEM(t, filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", kder)
}

// outsider runs a nats-server that tries to join the cluster through
// route (a URL with the credentials it presents) with the given lines
// added to its cluster block, and returns a connection to it.
func outsider(t *testing.T, bin, route, clusterExtra string) *nats.Conn {
	t.Helper()
	port, clusterPort := freeAddr(t), freeAddr(t)
	_, p, _ := net.SplitHostPort(port)
	_, cp, _ := net.SplitHostPort(clusterPort)
	conf := fmt.Sprintf("host: 127.0.0.1\nport: %s\ncluster {\n  name: cellcast\n  listen: 127.0.0.1:%s\n  routes: [%q]\n%s\n}\n", p, cp, route, clusterExtra)
	path := filepath.Join(t.TempDir(), "outsider.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var nc *nats.Conn
	var err error
	for i := 0; ; i++ {
		if nc, err = nats.Connect("nats://" + port); err == nil {
			break
		}
		if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestOutsiderOnTheRoutePortSeesNothing starts a cluster whose routes
// need the password and a certificate of the cluster's CA, then NATS
// servers of strangers that join its route port: without the password,
// or with it but a certificate of another CA, they see none of the
// cluster's messages and reach no JetStream API. With both, the same
// setup sees the traffic, so the refusals are the credentials' doing.
func TestOutsiderOnTheRoutePortSeesNothing(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("no nats-server binary in PATH (go install github.com/nats-io/nats-server/v2@v2.15.2)")
	}
	dir := t.TempDir()
	ca := newTestCA(t, dir, "cluster")
	nodeCert, nodeKey := ca.issue(t, dir, "node")
	stranger := newTestCA(t, dir, "stranger")
	strangerCert, strangerKey := stranger.issue(t, dir, "stranger-node")
	const password = "route-password-0123456789"
	pw := writeFile(t, "route-password", password+"\n")
	nodes := startCluster(t, 3, func(c *ClusterConfig) {
		c.Security = RouteSecurity{PasswordFile: pw, TLSCert: nodeCert, TLSKey: nodeKey, TLSCA: ca.file}
	})
	route := nodes[0].cfg.Cluster.Listen
	tlsBlock := func(cert, key, caFile string) string {
		return fmt.Sprintf("  tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }", cert, key, caFile)
	}
	// traffic publishes across nodes until stop, and counts what a
	// stranger's subscription to everything receives meanwhile.
	sees := func(nc *nats.Conn, window time.Duration) int64 {
		var got atomic.Int64
		sub, err := nc.Subscribe(">", func(*nats.Msg) { got.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		nc.Flush()
		sub1 := dial(t, nodes[1], nil)
		pub0 := dial(t, nodes[0], nil)
		wantOp(t, sub1.do(msg{"op": "subscribe", "uid": "sue", "cell": "1.2", "future": "1m"}), "subscribed")
		for end := time.Now().Add(window); time.Now().Before(end); {
			wantOp(t, pub0.do(msg{"op": "publish", "uid": "pete", "cell": "1.2.3", "expires": "1m", "desc": "secret"}), "published")
			time.Sleep(20 * time.Millisecond)
		}
		return got.Load()
	}
	jetStream := func(nc *nats.Conn) error {
		_, err := nc.Request("$JS.API.STREAM.NAMES", nil, time.Second)
		return err
	}

	creds := fmt.Sprintf("nats://cellcast:%s@%s", password, route)
	for name, c := range map[string]struct{ route, extra string }{
		"no credentials":                   {"nats://" + route, ""},
		"the password, no TLS":             {creds, ""},
		"a certificate, no password":       {"nats://" + route, tlsBlock(nodeCert, nodeKey, ca.file)},
		"the password, another CA":         {creds, tlsBlock(strangerCert, strangerKey, stranger.file)},
		"a wrong password, a trusted cert": {"nats://cellcast:not-the-password-at-all@" + route, tlsBlock(nodeCert, nodeKey, ca.file)},
	} {
		t.Run(name, func(t *testing.T) {
			nc := outsider(t, bin, c.route, c.extra)
			if n := sees(nc, 2*time.Second); n != 0 {
				t.Fatalf("the outsider saw %d of the cluster's messages", n)
			}
			if err := jetStream(nc); err == nil {
				t.Fatal("the outsider reached the cluster's JetStream API")
			}
		})
	}
	t.Run("control: the password and a certificate of the cluster's CA", func(t *testing.T) {
		nc := outsider(t, bin, creds, tlsBlock(nodeCert, nodeKey, ca.file))
		var n int64
		for try := 0; try < 10 && n == 0; try++ { // the route takes a moment to form
			n = sees(nc, time.Second)
		}
		if n == 0 {
			t.Fatal("a server with the cluster's credentials saw nothing either: the refusals above prove nothing")
		}
	})
}

// TestRoutesBeyondLoopbackNeedSecurity: a cluster listener others can
// reach needs the password and TLS, or the broker does not start.
func TestRoutesBeyondLoopbackNeedSecurity(t *testing.T) {
	for _, sec := range []RouteSecurity{{}, {PasswordFile: "x"}, {TLSCert: "a", TLSKey: "b", TLSCA: "c"}} {
		cfg := Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", Log: slog.New(slog.DiscardHandler),
			Cluster: ClusterConfig{Node: "n1", Listen: "0.0.0.0:0", Security: sec}}
		if b, err := Start(cfg); !errors.Is(err, ErrRoutesOpen) {
			if b != nil {
				b.Shutdown(t.Context())
			}
			t.Fatalf("%+v: %v, want ErrRoutesOpen", sec, err)
		}
	}
}
