package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/protocol"
)

// natsConn carries requests over NATS: each to the subject of its op with
// the client's inbox as reply subject, and notifications from
// cellcast.notify.<uid>. One goroutine reads both. Replies have a channel
// of their own, so a flood of notifications cannot make NATS drop them,
// and it is read first: NATS fills the channels in the order the broker
// sent, so a reply is handled before the notifications sent after it
// (those of a new subscription, say). NATS may drop notifications (a slow
// consumer, a reconnect): they carry prev, and the client resumes on a
// gap.
type natsConn struct {
	c       *Client
	nc      *nats.Conn
	inbox   string
	replies chan *nats.Msg
	notes   chan *nats.Msg
	token   string

	// dropped: NATS reported messages dropped since the sweeper looked.
	dropped atomic.Bool

	seen int // messages dropped, as of the reader's last look

	mu     sync.Mutex
	notify map[string]*nats.Subscription // by uid
	subs   []*nats.Subscription          // the inbox and the notify ones
}

// DialNATS connects to a broker over NATS, such as
// "nats://127.0.0.1:4222". Options.Token goes to the NATS server and with
// each request; when it is empty, a token in the URL's user part
// ("nats://TOKEN@HOST:4222", or the password of "nats://USER:TOKEN@HOST")
// serves. The client needs the user's uid, since replies and
// notifications come on the user's subjects: Options.UID, or else the
// "sub" claim of a JWT token (read, not verified: the broker verifies
// it). NATS reconnects by itself; the client then resumes every
// subscription, and it resumes one whenever a notification shows that
// one before it was dropped.
func DialNATS(ctx context.Context, url string, opts Options) (*Client, error) {
	opts.withDefaults()
	if err := natsIdentity(url, &opts); err != nil {
		return nil, err
	}
	c := newClient(url, opts)
	n := &natsConn{c: c, replies: make(chan *nats.Msg, 1<<12), notes: make(chan *nats.Msg, opts.NATSBuffer), token: opts.Token, notify: map[string]*nats.Subscription{}}
	nopts := []nats.Option{nats.Name("cellcast-client"), nats.MaxReconnects(-1),
		nats.ReconnectWait(opts.MinBackoff),
		// Requests made while away fail rather than wait in a buffer:
		// their callers' deadlines are theirs to spend.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				err = errors.New("disconnected")
			}
			c.lost(n, err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { c.reattach(n) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				n.dropped.Store(true)
				return
			}
			c.opts.Log.Warn("cellcast client: NATS", "err", err)
		}),
	}
	if opts.Token != "" {
		nopts = append(nopts, nats.Token(opts.Token))
	}
	// Replies come only to the user's own inboxes (docs/protocol.md,
	// NATS): under auth no other subject is answered or readable.
	nopts = append(nopts, nats.CustomInboxPrefix(protocol.InboxPrefix(opts.UID)))
	var err error
	if n.nc, err = nats.Connect(url, nopts...); err != nil {
		return nil, fmt.Errorf("cellcast: NATS %s: %w", url, err)
	}
	n.inbox = n.nc.NewInbox()
	in, err := n.nc.ChanSubscribe(n.inbox, n.replies)
	if err != nil {
		n.nc.Close()
		return nil, err
	}
	n.subs = append(n.subs, in)
	if err := n.listen(opts.UID); err != nil {
		n.nc.Close()
		return nil, err
	}
	c.readers.Add(1)
	go n.read()
	c.start(n)
	return c, nil
}

// natsIdentity completes opts.Token from the URL and opts.UID from the
// token.
func natsIdentity(rawURL string, opts *Options) error {
	if opts.Token == "" {
		opts.Token = urlToken(rawURL)
	}
	sub, isJWT := tokenSubject(opts.Token)
	switch {
	case opts.UID == "" && isJWT:
		opts.UID = sub
	case opts.UID == "" && opts.Token != "":
		return fmt.Errorf("%w: NATS needs the uid: the token is not a JWT whose \"sub\" claim names the user", ErrInvalidRequest)
	case opts.UID == "":
		return fmt.Errorf("%w: NATS needs the uid, or a JWT token that names it: replies and notifications come on the user's subjects", ErrInvalidRequest)
	case isJWT && sub != opts.UID:
		// The server would refuse the inbox of another user without a word.
		return fmt.Errorf("%w: uid %q is not the token's, %q", ErrInvalidRequest, opts.UID, sub)
	}
	return nil
}

// urlToken is the token in the user part of a NATS URL (the first of a
// comma-separated list that has one): the password, or else the user.
func urlToken(rawURL string) string {
	for _, u := range strings.Split(rawURL, ",") {
		p, err := neturl.Parse(strings.TrimSpace(u))
		if err != nil || p.User == nil {
			continue
		}
		if pw, ok := p.User.Password(); ok {
			return pw
		}
		return p.User.Username()
	}
	return ""
}

// tokenSubject reads the "sub" claim of a JWT without verifying it; false
// when tok is not a JWT with one.
func tokenSubject(tok string) (string, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", false
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Sub == "" {
		return "", false
	}
	return claims.Sub, true
}

// read hands the frames to the client, one at a time.
func (n *natsConn) read() {
	defer n.c.readers.Done()
	for {
		select {
		case m := <-n.replies:
			n.reply(m)
		case m := <-n.notes:
			n.drainReplies()
			n.c.frame(n, m.Data)
			// Caught up after NATS dropped some: ask for what is missing
			// now rather than at the sweeper's next look.
			if len(n.notes) == 0 && n.droppedSince() {
				n.c.repairAll(n)
			}
		case <-n.c.done:
			return
		}
	}
}

// reply handles one message on the inbox. NATS itself answers there
// with a status and no body, "503" when no broker listened for the
// request (one restarting, say): that names no request, so it is left to
// the request's own timeout or the sweeper's retry.
func (n *natsConn) reply(m *nats.Msg) {
	if len(m.Data) == 0 && m.Header.Get("Status") != "" {
		n.c.opts.Log.Debug("cellcast client: NATS status on the inbox", "status", m.Header.Get("Status"), "description", m.Header.Get("Description"))
		return
	}
	n.c.frame(n, m.Data)
}

// drainReplies handles the replies already in: they came before the
// notification just taken.
func (n *natsConn) drainReplies() {
	for {
		select {
		case m := <-n.replies:
			n.reply(m)
		default:
			return
		}
	}
}

// droppedSince reports whether NATS dropped messages of the client's
// subscriptions since the last call. Only the reader calls it.
func (n *natsConn) droppedSince() bool {
	total := 0
	n.mu.Lock()
	for _, s := range n.subs {
		if d, err := s.Dropped(); err == nil {
			total += d
		}
	}
	n.mu.Unlock()
	more := total > n.seen
	n.seen = total
	return more
}

// listen subscribes to uid's notifications, once.
func (n *natsConn) listen(uid string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notify[uid] != nil {
		return nil
	}
	s, err := n.nc.ChanSubscribe(protocol.NotifySubject(uid), n.notes)
	if err != nil {
		return fmt.Errorf("cellcast: listening on %s: %w", protocol.NotifySubject(uid), err)
	}
	n.notify[uid] = s
	n.subs = append(n.subs, s)
	// A round trip, so the server has the interest before the request.
	return n.nc.Flush()
}

func (n *natsConn) send(op string, b []byte) error {
	m := &nats.Msg{Subject: protocol.RequestSubject(op), Reply: n.inbox, Data: b}
	if n.token != "" {
		m.Header = nats.Header{"Authorization": []string{"Bearer " + n.token}}
	}
	return n.nc.PublishMsg(m)
}

func (n *natsConn) close() error {
	n.nc.Close()
	return nil
}

func (n *natsConn) abort() { n.nc.ForceReconnect() }
