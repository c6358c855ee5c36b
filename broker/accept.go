package broker

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// defaultMaxConns leaves 1,024 of the process's file descriptors for the
// store, the NATS server and the rest. The Go runtime has raised the soft
// limit to the hard one at start (Go ≥ 1.19).
func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2048 {
		return 1024
	}
	return int(min(lim.Cur, 1<<24)) - 1024
}

// guardedListener closes, as soon as they are accepted, the connections
// the broker will not serve, so that those clients learn it at once and
// the rest are served: past the connection cap, past a source address's
// connection rate (a storm from one host), and when the process has no
// file descriptor left — then a spare descriptor is given up for a moment
// to accept and close the connection, rather than leaving it in the
// kernel's queue and retrying the accept in a loop. Each refusal is
// counted by reason and logged at most every 10 seconds.
type guardedListener struct {
	net.Listener
	limits  HTTPLimits
	log     *slog.Logger
	refused *prometheus.CounterVec

	mu      sync.Mutex
	open    int
	sources map[string]*rate.Limiter // by source IP; forgotten when full
	spare   *os.File                 // a descriptor kept for refusing when none is left
	logged  map[string]time.Time     // by reason
}

// maxSources bounds the per-source limiters kept; past it they start
// afresh, which at worst lets one burst more through.
const maxSources = 100_000

func newGuardedListener(ln net.Listener, l HTTPLimits, log *slog.Logger, refused *prometheus.CounterVec) *guardedListener {
	spare, _ := os.Open(os.DevNull)
	return &guardedListener{Listener: ln, limits: l, log: log, refused: refused, sources: map[string]*rate.Limiter{}, spare: spare, logged: map[string]time.Time{}}
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			l.refuseWithoutDescriptors()
			continue
		}
		if err != nil {
			return nil, err
		}
		why := l.admit(c)
		if why == "" {
			return &guardedConn{Conn: c, l: l}, nil
		}
		c.Close()
		l.refuse(why, "remote", c.RemoteAddr().String())
	}
}

// admit takes a slot for c, or says why not.
func (l *guardedListener) admit(c net.Conn) string {
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.ConnRatePerIP > 0 {
		lim := l.sources[host]
		if lim == nil {
			if len(l.sources) >= maxSources {
				clear(l.sources)
			}
			lim = rate.NewLimiter(rate.Limit(l.limits.ConnRatePerIP), l.limits.ConnBurstPerIP)
			l.sources[host] = lim
		}
		if !lim.Allow() {
			return "source_rate"
		}
	}
	if l.open >= l.limits.MaxConns {
		return "cap"
	}
	l.open++
	return ""
}

// refuseWithoutDescriptors accepts one waiting connection on the spare
// descriptor and closes it, or waits a moment when that fails too.
func (l *guardedListener) refuseWithoutDescriptors() {
	l.mu.Lock()
	spare := l.spare
	l.spare = nil
	l.mu.Unlock()
	if spare != nil {
		spare.Close()
		if c, err := l.Listener.Accept(); err == nil {
			c.Close()
		}
	} else {
		time.Sleep(10 * time.Millisecond)
	}
	l.refuse("descriptors", "hint", "raise the file descriptor limit (ulimit -n, LimitNOFILE=) or lower --max-conns")
	again, _ := os.Open(os.DevNull)
	l.mu.Lock()
	l.spare = again
	l.mu.Unlock()
}

func (l *guardedListener) refuse(why string, args ...any) {
	if l.refused != nil {
		l.refused.WithLabelValues(why).Inc()
	}
	l.mu.Lock()
	tell := time.Since(l.logged[why]) >= 10*time.Second
	if tell {
		l.logged[why] = time.Now()
	}
	l.mu.Unlock()
	if tell {
		l.log.Warn("refusing new connections (counted in cellcast_connections_refused_total; logged every 10 s at most)",
			append([]any{"reason", why, "max_conns", l.limits.MaxConns}, args...)...)
	}
}

// guardedConn frees its slot once closed. The HTTP server hijacks a
// WebSocket's connection but still closes it through this wrapper, since
// the hijacked conn is the one accepted. It passes on the socket's
// descriptor, which the gateway's idle poller watches.
type guardedConn struct {
	net.Conn
	l    *guardedListener
	once sync.Once
}

func (c *guardedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *guardedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// logDescriptors says what the process may open: a broker with a
// connection per phone lives by this limit (docs/operations.md).
func logDescriptors(log *slog.Logger, maxConns int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	log.Info("file descriptors (the soft limit raised to the hard one at start)", "soft", lim.Cur, "hard", lim.Max, "max_conns", maxConns)
	if uint64(maxConns)+1024 > lim.Cur {
		log.Warn("--max-conns is near or past the file descriptor limit: raise the limit (ulimit -n, LimitNOFILE=)", "max_conns", maxConns, "limit", lim.Cur)
	}
}
