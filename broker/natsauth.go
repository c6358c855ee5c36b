package broker

import (
	"crypto/subtle"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/gateway"
)

// natsBrokerUser is the broker's own user on the embedded server, and
// natsSystemUser its user in the server's system account, which alone may
// ask JetStream to remove a server from the cluster (removenode.go).
const (
	natsBrokerUser = "cellcast-broker"
	natsSystemUser = "cellcast-system"
)

// natsAuth admits the broker itself with every permission and clients
// with a bearer token (as token or password) with the permissions a user
// needs and no more: publish requests on cellcast subjects; subscribe to
// its own notifications and to its own inbox, _INBOX.<uid>.>, so nobody
// reads another user's replies. A client's connection ends when its token
// expires. Without a verifier (open mode, on loopback) anyone is admitted
// with every permission, as with no authentication at all.
type natsAuth struct {
	// internal and system are random secrets, known only in process: the
	// broker's token, and its token for the system account.
	internal string
	system   string
	verifier auth.Verifier
	// maxConns bounds a user's connections (gateway.Limits.UserConnections);
	// ns is the server, set once it exists, to count them.
	maxConns int
	ns       atomic.Pointer[server.Server]
}

func (a *natsAuth) Check(c server.ClientAuthentication) bool {
	o := c.GetOpts()
	tok := o.Token
	if tok == "" {
		tok = o.Password
	}
	// In constant time: these tokens give every permission, the system
	// one over the whole cluster.
	if subtle.ConstantTimeCompare([]byte(tok), []byte(a.internal)) == 1 {
		c.RegisterUser(&server.User{Username: natsBrokerUser})
		return true
	}
	if a.system != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.system)) == 1 {
		ns := a.ns.Load()
		if ns == nil || ns.SystemAccount() == nil {
			return false
		}
		c.RegisterUser(&server.User{Username: natsSystemUser, Account: ns.SystemAccount()})
		return true
	}
	if a.verifier == nil {
		c.RegisterUser(&server.User{Username: "anonymous"})
		return true
	}
	id, err := a.verifier.Verify(tok)
	if err != nil || !gateway.SubjectSafe(id.UID) || a.tooMany(id.UID) {
		return false
	}
	c.RegisterUser(&server.User{Username: id.UID, ConnectionDeadline: id.Expires, Permissions: userPermissions(id.UID)})
	return true
}

// tooMany reports whether uid already holds its share of connections.
// The server offers no hook at disconnect, so the count is asked of it;
// connections made at the same moment may pass the bound by a few.
func (a *natsAuth) tooMany(uid string) bool {
	ns := a.ns.Load()
	if ns == nil {
		return false
	}
	cz, err := ns.Connz(&server.ConnzOptions{User: uid, Limit: a.maxConns + 1})
	return err == nil && len(cz.Conns) >= a.maxConns
}

// userPermissions are what a user may do on the NATS server; docs/security.md
// gives the same as a server configuration for an external server.
func userPermissions(uid string) *server.Permissions {
	p := gateway.SubjectPrefix
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{gateway.SubjectPub + ".>",
			p + "publish", p + "subscribe", p + "unsubscribe", p + "resume", p + "query", p + "page"}},
		Subscribe: &server.SubjectPermission{Allow: []string{gateway.SubjectNotify + "." + uid, gateway.InboxPrefix(uid) + ".>"}},
	}
}

// probeIsolation connects to an external NATS server as nobody and
// reports how it could read other users' data: connecting at all, and
// subscribing to every inbox or every notification subject. An empty
// answer means the server refused the anonymous connection.
func probeIsolation(url string, tlsOpt nats.Option) []string {
	opts := []nats.Option{nats.Name("cellcast-isolation-probe"), nats.NoReconnect(), nats.Timeout(3 * time.Second)}
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	errs := make(chan error, 4)
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	// The broker's credentials stay out of the probe.
	servers := strings.Split(url, ",")
	for i, s := range servers {
		if u, err := neturl.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			u.User = nil
			servers[i] = u.String()
		}
	}
	nc, err := nats.Connect(strings.Join(servers, ","), opts...)
	if err != nil {
		return nil
	}
	defer nc.Close()
	found := []string{"a client without credentials may connect"}
	for _, subj := range []string{"_INBOX.>", gateway.SubjectNotify + ".>"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			continue
		}
		// A refused subscription comes back as an async permission error.
		nc.FlushTimeout(2 * time.Second)
		select {
		case <-errs:
		case <-time.After(200 * time.Millisecond):
			found = append(found, fmt.Sprintf("and subscribe to %s", subj))
		}
	}
	return found
}

// checkOwnPermissions tries, on an external server, what the broker must
// be allowed beyond the request subscriptions ServeNATS has made: a
// notification and a reply, on subjects nobody reads. The server refuses
// what it does not permit with an error that nats.go records as the
// connection's last error before it reads the flush's pong.
func checkOwnPermissions(nc *nats.Conn) error {
	const probe = "cellcast-permission-probe"
	nc.Publish(gateway.SubjectNotify+"."+probe, nil)
	nc.Publish(gateway.InboxPrefix(probe)+".x", nil)
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		return fmt.Errorf("nats: checking the broker's permissions: %w", err)
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) {
		return fmt.Errorf("the broker's NATS user lacks a permission it needs (docs/security.md lists them): %w", err)
	}
	return nil
}
