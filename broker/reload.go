package broker

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrNoAuth: Reload on a broker running open has nothing to reload.
var ErrNoAuth = errors.New("broker: no auth configured, nothing to reload")

// Reload reads the token files (--auth-tokens, --auth-hmac-secret-file)
// again and swaps the new verifier in, so that a token can be revoked
// without a restart. WebSocket connections whose token is now refused
// close with a policy close frame; the embedded NATS server's clients are
// disconnected and reconnect, their tokens checked anew. HTTP requests
// and NATS requests carry their token and are checked each time. On an
// error the old tokens stay in force.
func (b *Broker) Reload() error {
	if b.auth == nil {
		return ErrNoAuth
	}
	v, err := b.cfg.verifier()
	if err != nil {
		return err
	}
	if v == nil {
		return ErrNoAuth // the files cannot vanish from the config; kept for safety
	}
	b.auth.Store(v)
	closed := b.gw.Reverify()
	dropped := 0
	if b.ns != nil {
		cz, err := b.ns.Connz(&server.ConnzOptions{Username: true, Limit: 1 << 30})
		if err == nil {
			for _, c := range cz.Conns {
				if c.AuthorizedUser != natsBrokerUser && b.ns.DisconnectClientByID(c.Cid) == nil {
					dropped++
				}
			}
		}
	}
	b.log.Info("auth reloaded", "ws_closed", closed, "nats_disconnected", dropped)
	return nil
}

// reloadOnHUP reloads on every SIGHUP until ctx ends.
func (b *Broker) reloadOnHUP(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := b.Reload(); err != nil {
				b.log.Error("reloading auth on SIGHUP: the old tokens stay in force", "err", err)
			}
		}
	}
}
