package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrRoutesOpen refuses a cluster listener that others than this machine
// reach without route credentials and TLS: a stranger's NATS server that
// joins the route port sees every message (users' publications and
// tokens) and can delete every shard's log.
var ErrRoutesOpen = errors.New("a cluster listener beyond loopback needs route credentials and TLS: give --cluster-password-file, and --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca")

// RouteSecurity is how the embedded NATS servers of a cluster's nodes
// know each other: a shared route password, and TLS with certificates
// signed by the cluster's CA, verified both ways.
type RouteSecurity struct {
	User         string // default "cellcast"
	PasswordFile string // the shared route password, one line
	TLSCert      string // this node's certificate (PEM), valid for its route address
	TLSKey       string
	TLSCA        string // the CA that signed every node's certificate
}

func (r *RouteSecurity) hasTLS() bool { return r.TLSCert != "" || r.TLSKey != "" || r.TLSCA != "" }

// secureRoutes sets the route listener's authorization and TLS, and the
// credentials the routes this node dials present.
func (b *Broker) secureRoutes(o *server.Options) error {
	rs := b.cfg.Cluster.Security
	if !loopback(b.cfg.Cluster.Listen) && (rs.PasswordFile == "" || !rs.hasTLS()) {
		return fmt.Errorf("%w (--cluster-listen %s)", ErrRoutesOpen, b.cfg.Cluster.Listen)
	}
	if rs.PasswordFile != "" {
		pw, err := os.ReadFile(rs.PasswordFile)
		if err != nil {
			return fmt.Errorf("--cluster-password-file: %w", err)
		}
		pass := strings.TrimSpace(string(pw))
		if len(pass) < 16 {
			return fmt.Errorf("--cluster-password-file %s: the route password must be at least 16 characters", rs.PasswordFile)
		}
		user := rs.User
		if user == "" {
			user = "cellcast"
		}
		o.Cluster.Username, o.Cluster.Password = user, pass
		for _, u := range o.Routes {
			if u.User == nil {
				u.User = url.UserPassword(user, pass)
			}
		}
	}
	if rs.hasTLS() {
		if rs.TLSCert == "" || rs.TLSKey == "" || rs.TLSCA == "" {
			return errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together: each node proves itself with a certificate the others' CA verifies")
		}
		conf, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: rs.TLSCert, KeyFile: rs.TLSKey, CaFile: rs.TLSCA, Verify: true, MinVersion: tls.VersionTLS12})
		if err != nil {
			return fmt.Errorf("route TLS: %w", err)
		}
		// A node is a server to the routes it accepts and a client of
		// those it dials: both sides verify against the cluster's CA.
		conf.RootCAs = conf.ClientCAs
		o.Cluster.TLSConfig = conf
		o.Cluster.TLSTimeout = 2
	}
	return nil
}
