package broker

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/gateway"
)

// connectNATS embeds a server unless a URL is given, and connects.
func (b *Broker) connectNATS(verifier auth.Verifier, tlsConf *tls.Config) error {
	opts := []nats.Option{nats.Name("cellcast-broker"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			// Close calls it too, with no error: the broker's own clean stop.
			if err == nil && nc.IsClosed() {
				b.log.Debug("nats connection closed")
				return
			}
			b.log.Warn("nats disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { b.log.Info("nats reconnected", "url", nc.ConnectedUrl()) }),
		// nats.go passes a nil subscription for connection-level errors
		// and permission violations.
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			if s == nil {
				b.log.Error("nats", "err", err)
				return
			}
			b.log.Error("nats", "subject", s.Subject, "err", err)
		}),
	}
	if b.cfg.NATSURL != "" {
		if b.cfg.NATSToken != "" {
			opts = append(opts, nats.Token(b.cfg.NATSToken))
		}
		nc, err := nats.Connect(b.cfg.NATSURL, opts...)
		if err != nil {
			return fmt.Errorf("nats %s: %w", b.cfg.NATSURL, err)
		}
		b.nc = nc
		if found := probeIsolation(b.cfg.NATSURL, nil); len(found) > 0 {
			msg := "the external NATS server does not isolate users: " + strings.Join(found, " ") + " (docs/security.md lists the permissions to give)"
			if b.cfg.NATSRequireIsolation {
				return errors.New(msg)
			}
			b.log.Warn(msg)
		}
		return nil
	}
	host, portStr, err := net.SplitHostPort(b.cfg.NATSListen)
	if err != nil {
		return fmt.Errorf("nats listen %q: %w", b.cfg.NATSListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("nats listen %q: bad port", b.cfg.NATSListen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	internal, system := randomSecret(), randomSecret()
	sopts := &server.Options{ServerName: "cellcast", Host: host, Port: port, NoSigs: true, NoLog: true, MaxPayload: 1 << 20,
		MaxConn: b.cfg.HTTP.MaxConns, TLSConfig: tlsConf, TLSTimeout: 2}
	if b.cfg.clustered() {
		if err := b.clusterOptions(sopts); err != nil {
			return err
		}
	}
	var na *natsAuth
	// A cluster node needs its system-account user even in open mode.
	if verifier != nil || b.cfg.clustered() {
		na = &natsAuth{internal: internal, system: system, verifier: verifier, maxConns: b.cfg.Gateway.UserConnections}
		if na.maxConns == 0 {
			na.maxConns = gateway.DefaultUserConnections
		}
		sopts.CustomClientAuthentication = na
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	if na != nil {
		na.ns.Store(ns)
		b.natsSystem = system
	}
	fatal := natsFatal(make(chan string, 1))
	ns.SetLoggerV2(fatal, false, false, false)
	go ns.Start()
	wait := 10 * time.Second
	if b.cfg.clustered() {
		wait = time.Minute // a clustered JetStream server waits for its peers
		b.log.Info("starting the embedded NATS server; it waits for the other nodes' servers", "cluster", sopts.Cluster.Host+":"+strconv.Itoa(sopts.Cluster.Port), "routes", len(sopts.Routes))
	}
	for end := time.Now().Add(wait); !ns.ReadyForConnections(50 * time.Millisecond); {
		select {
		case msg := <-fatal:
			ns.Shutdown()
			return fmt.Errorf("embedded nats on %s: %s", b.cfg.NATSListen, msg)
		default:
		}
		if time.Now().After(end) {
			ns.Shutdown()
			return fmt.Errorf("embedded nats did not start on %s within %v", b.cfg.NATSListen, wait)
		}
	}
	b.ns = ns
	// In process, no TLS: a tls:// URL would have nats.go insist on it.
	nc, err := nats.Connect("nats://in-process", append(opts, nats.InProcessServer(ns), nats.Token(internal))...)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	b.nc = nc
	return nil
}

func randomSecret() string {
	secret := make([]byte, 24)
	rand.Read(secret)
	return hex.EncodeToString(secret)
}

// natsFatal takes the embedded server's fatal errors, such as a listener
// it cannot open, which it otherwise reports only by never becoming ready.
// Its other messages are dropped, as with NoLog.
type natsFatal chan string

func (f natsFatal) Fatalf(format string, v ...any) {
	select {
	case f <- fmt.Sprintf(format, v...):
	default: // one is enough
	}
}

func (natsFatal) Noticef(string, ...any) {}
func (natsFatal) Warnf(string, ...any)   {}
func (natsFatal) Errorf(string, ...any)  {}
func (natsFatal) Debugf(string, ...any)  {}
func (natsFatal) Tracef(string, ...any)  {}
