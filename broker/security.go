package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/seed84792017/cellcast/auth"
)

// ErrOpenBeyondLoopback refuses to run without auth where anyone but
// local processes could reach the broker.
var ErrOpenBeyondLoopback = errors.New("running without auth needs every listener and the NATS connection on loopback: give --auth-tokens or --auth-hmac-secret-file")

// loopback reports whether addr (host:port) only listens on loopback.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// urlsLoopback reports whether every server of a NATS URL list (comma
// separated, as nats.Connect takes it) is on loopback.
func urlsLoopback(urls string) bool {
	for _, s := range strings.Split(urls, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return false
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "4222")
		}
		if !loopback(host) {
			return false
		}
	}
	return true
}

// exposed lists the addresses the broker reaches beyond loopback.
func (c *Config) exposed() []string {
	var out []string
	if !loopback(c.HTTPAddr) {
		out = append(out, "--http "+c.HTTPAddr)
	}
	if c.MetricsAddr != "" && !loopback(c.MetricsAddr) {
		out = append(out, "--metrics-listen "+c.MetricsAddr)
	}
	if c.NATSURL != "" && !urlsLoopback(c.NATSURL) {
		out = append(out, "--nats-url "+c.NATSURL)
	}
	if c.NATSURL == "" && !loopback(c.NATSListen) {
		out = append(out, "--nats-listen "+c.NATSListen)
	}
	return out
}

// checkExposure refuses open mode beyond loopback and warns when bearer
// tokens would cross the network in clear text.
func (b *Broker) checkExposure(verifier auth.Verifier) error {
	exposed := b.cfg.exposed()
	if verifier == nil {
		if len(exposed) > 0 {
			return fmt.Errorf("%w (%v)", ErrOpenBeyondLoopback, exposed)
		}
		b.log.Warn("running without auth: any local client may act as any user (requests name their uid)")
		return nil
	}
	if b.cfg.TLSCert == "" && (!loopback(b.cfg.HTTPAddr) || (b.cfg.NATSURL == "" && !loopback(b.cfg.NATSListen))) {
		b.log.Warn("auth without TLS on a non-loopback address: bearer tokens travel in clear text; give --tls-cert and --tls-key, or terminate TLS in front of the broker",
			"http", b.cfg.HTTPAddr, "nats", b.cfg.NATSListen)
	}
	return nil
}

// tlsConfig loads the certificate and key, or returns nil without them.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	if c.TLSCert == "" || c.TLSKey == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
