package broker

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed84792017/cellcast/auth"
)

// HTTPLimits bound the HTTP server, against clients that hold connections
// open (slowloris) or send oversized headers. Zero fields take the
// defaults noted. A WebSocket, once upgraded, has its own deadlines (the
// gateway's ping/pong and write timeout) and no longer these.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration // default 10 s
	ReadTimeout       time.Duration // a whole request; default 30 s
	WriteTimeout      time.Duration // a whole response; default 30 s
	IdleTimeout       time.Duration // a keep-alive connection between requests; default 120 s
	MaxHeaderBytes    int           // default 16 KiB
	MaxConns          int           // open TCP connections, WebSockets included; default: the descriptor limit less 1,024
	// ConnRatePerIP and ConnBurstPerIP bound how fast one source address
	// may open connections (accept.go); default 200/s, bursts of 2,000.
	// A negative rate lifts the bound.
	ConnRatePerIP  float64
	ConnBurstPerIP int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.ReadHeaderTimeout == 0 {
		l.ReadHeaderTimeout = 10 * time.Second
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = 30 * time.Second
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = 30 * time.Second
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = 120 * time.Second
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = 16 << 10
	}
	if l.MaxConns == 0 {
		l.MaxConns = defaultMaxConns()
	}
	if l.ConnRatePerIP == 0 {
		l.ConnRatePerIP = 200
	}
	if l.ConnBurstPerIP == 0 {
		l.ConnBurstPerIP = 2000
	}
	return l
}

// requireToken guards h with a static bearer token, compared in constant
// time.
func requireToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(auth.Bearer(r.Header.Get("Authorization"))), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized: this endpoint needs the metrics token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenError is an address the broker cannot listen on: taken by another
// process, say, or not one of the machine's.
type ListenError struct {
	Flag string // the flag that gives the address, e.g. "--http"
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	cause := e.Err
	var op *net.OpError // its text repeats the address
	if errors.As(cause, &op) && op.Err != nil {
		cause = op.Err
	}
	return fmt.Sprintf("cannot listen on %s (%s): %v", e.Addr, e.Flag, cause)
}

func (e *ListenError) Unwrap() error { return e.Err }

// bind opens the HTTP and metrics listeners, and checks the embedded NATS
// server's addresses are free, before the store is opened: a taken port
// fails the start at once. Connections that arrive before the broker
// serves wait in the listen backlog.
func (b *Broker) bind() error {
	var err error
	if b.ln, err = net.Listen("tcp", b.cfg.HTTPAddr); err != nil {
		return &ListenError{Flag: "--http", Addr: b.cfg.HTTPAddr, Err: err}
	}
	if b.cfg.MetricsAddr != "" {
		if b.mln, err = net.Listen("tcp", b.cfg.MetricsAddr); err != nil {
			return &ListenError{Flag: "--metrics-listen", Addr: b.cfg.MetricsAddr, Err: err}
		}
	}
	if b.cfg.NATSURL != "" {
		return nil
	}
	// The NATS server opens its own listeners, and reports one it cannot
	// open only by never becoming ready: try each address first. Another
	// process may still take it in between; connectNATS catches that.
	if err := probe(b.cfg.NATSListen); err != nil {
		return &ListenError{Flag: "--nats-listen", Addr: b.cfg.NATSListen, Err: err}
	}
	if b.cfg.clustered() {
		if err := probe(b.cfg.Cluster.Listen); err != nil {
			return &ListenError{Flag: "--cluster-listen", Addr: b.cfg.Cluster.Listen, Err: err}
		}
	}
	return nil
}

// probe listens on addr and closes again; a port 0 is always free.
func probe(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// listen serves on the listeners bind opened: HTTP (with TLS when
// configured, capped in connections) and metrics.
func (b *Broker) listen(reg *prometheus.Registry, tlsConf *tls.Config) error {
	l := b.cfg.HTTP
	ln := b.ln // Addr() stays the TCP address under TLS
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellcast_connections_refused_total",
		Help: "TCP connections closed as soon as accepted: at the connection cap (cap), over the per-source rate (source_rate), or with no file descriptor left (descriptors)."},
		[]string{"reason"})
	reg.MustRegister(refused)
	logDescriptors(b.log, l.MaxConns)
	var served net.Listener = newGuardedListener(ln, l, b.log, refused)
	if tlsConf != nil {
		served = tls.NewListener(served, tlsConf)
	}
	mux := b.routes()
	switch {
	case b.cfg.MetricsAddr != "":
		m := http.NewServeMux()
		b.operatorRoutes(m, reg)
		b.metrics = &http.Server{Handler: m, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout, IdleTimeout: l.IdleTimeout,
			MaxHeaderBytes: l.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelWarn)}
		go b.metrics.Serve(b.mln)
	case loopback(b.cfg.HTTPAddr) || b.cfg.MetricsToken != "":
		b.operatorRoutes(mux, reg)
	default:
		b.log.Warn("/metrics, /debug and /admin (backups, removing a cluster node) are not served on a non-loopback HTTP address without a token: give --metrics-listen or --metrics-token")
	}
	// WriteTimeout bounds a whole HTTP reply, /debug/pprof/profile too
	// when it shares this listener (ask for ?seconds= below it); the
	// metrics listener has no write timeout.
	b.http = &http.Server{Handler: mux, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout,
		IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelWarn)}
	go func() { b.served <- b.http.Serve(served) }()
	return nil
}
